"""Records as columns: what the per-turn stages read (DESIGN §10).

A :class:`Columns` holds the valid records of one record set as numpy arrays, one row per
record in input order: times, ttls, flags, and every string field as codes into its distinct
values. It is built once per record set (:attr:`memsolve.records.RecordSet.columns`) and kept
between turns, so admission, the rules and the compile stage are array operations, not a loop
over record objects. :class:`LevelTable` is the records' levels laid out in one policy's fidelity
order (tokens counted from text once, with that policy's counter).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from .compiled import scans

if TYPE_CHECKING:  # records builds on this module; Record is for annotations only
    from .level import Level
    from .records import Record

T = TypeVar("T")

_SCANS = scans()
_STRING_FIELDS = ("tenant", "store", "session", "key", "version", "document")
ABSENT = -1  # the code of a field the record does not give
UNKNOWN = -2  # the code of a value no record has: compares unequal to every row
_MEMO_SIZE = 256


def distinct(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)`` of a 1-d array of integers: numpy 2's own imports numpy.ma the first
    time it is called bare (13 ms, once per process: a CLI round's every call pays it)."""
    ordered = np.sort(values)
    if len(ordered) == 0:
        return ordered
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))]


def objects(values: Sequence[Any]) -> np.ndarray:
    """Values (texts) as a 1-d object array: indexed by numpy rather than by a Python loop."""
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _code_counts(codes: np.ndarray) -> np.ndarray | None:
    """How many rows hold each code from 0 up, where the codes are integers from 0 to a few
    times their number (a count per code is then cheaper than a sort); None otherwise."""
    if not codes.size or codes.dtype.kind not in "iu" or codes.min() < 0 or codes.max() >= 4 * codes.size + 64:
        return None
    return np.bincount(codes)


def renumbered(codes: np.ndarray) -> np.ndarray:
    """Each row's code as its rank among the distinct codes (``np.unique``'s inverse)."""
    counts = _code_counts(codes)
    if counts is None:
        return np.unique(codes, return_inverse=True)[1].ravel()
    return (np.cumsum(counts > 0) - 1)[codes]


def groups(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(codes, return_index=True, return_inverse=True)`` less the values: the row of
    each distinct code's first occurrence, in ascending order of code, and each row's group."""
    counts = _code_counts(codes)
    if counts is None:
        _, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
        return first, inverse.ravel()
    inverse = (np.cumsum(counts > 0) - 1)[codes]
    first = np.full(np.count_nonzero(counts), codes.size, dtype=np.intp)
    np.minimum.at(first, inverse, np.arange(codes.size))
    return first, inverse


@dataclass(frozen=True, eq=False)
class Codes:
    """One string field as integer codes (ABSENT where a record has none) and the distinct values."""

    codes: np.ndarray  # int32, one per row
    values: tuple[str, ...]
    index: dict[str, int] = field(repr=False)

    @classmethod
    def of(cls, values: Sequence[str | None]) -> Codes:
        """Codes in order of first appearance (dict lookups mapped in C, not a generator's)."""
        index = {value: code for code, value in enumerate(v for v in dict.fromkeys(values) if v is not None)}
        lookup = {**index, None: ABSENT}
        return cls(np.fromiter(map(lookup.__getitem__, values), dtype=np.int32, count=len(values)), tuple(index), index)

    @classmethod
    def compiled(cls, records: tuple[Record, ...], name: str) -> Codes:
        """:meth:`of` the records' field ``name``, by the compiled loop (``_scan.c``)."""
        index: dict[str, int] = {}
        codes = np.frombuffer(_SCANS.codes(records, name, index), dtype=np.int32)  # type: ignore[union-attr]
        return cls(codes, tuple(index), index)

    def code(self, value: str | None) -> int:
        """The code of ``value``: ABSENT for None, UNKNOWN for a value no record has."""
        return ABSENT if value is None else self.index.get(value, UNKNOWN)

    def isin(self, values: Sequence[str]) -> np.ndarray:
        """Rows whose value is one of ``values`` (never a row without one)."""
        wanted = [c for c in (self.index.get(v) for v in values) if c is not None]
        return np.isin(self.codes, np.array(wanted, dtype=np.int32))

    def take(self, rows: np.ndarray) -> Codes:
        return Codes(self.codes[rows], self.values, self.index)

    def extended(self, more: Codes) -> Codes:
        """These rows, then ``more``'s, its values coded in this index (new ones appended)."""
        index = dict(self.index)
        remap = np.array([index.setdefault(v, len(index)) for v in more.values] + [ABSENT], dtype=np.int32)
        return Codes(np.concatenate([self.codes, remap[more.codes]]), tuple(index), index)


@dataclass(frozen=True, eq=False)
class LevelTable:
    """The records' levels in one fidelity order: sizes, utilities (NaN where the record leaves
    the utility to relevance), which levels each record offers, and the admission facts."""

    levels: tuple[str, ...]
    tokens: np.ndarray  # int64 (n, k); 0 where absent
    utility: np.ndarray  # float64 (n, k); NaN where not given, 0 where absent
    present: np.ndarray  # bool (n, k)
    unknown: np.ndarray  # bool (n,): the record has a level outside this fidelity list
    missing_utility: np.ndarray  # bool (n,): some level has no utility (derived from relevance)
    count: Callable[[str], int] = field(repr=False, default=len)  # the counter the table was built with

    def take(self, rows: np.ndarray) -> LevelTable:
        return LevelTable(self.levels, self.tokens[rows], self.utility[rows], self.present[rows],
                          self.unknown[rows], self.missing_utility[rows], self.count)

    def extended(self, more: Sequence[Record]) -> LevelTable:
        """This table, then the rows of ``more`` (their tokens counted with the same counter)."""
        other = _level_table(more, self.levels, self.count)
        return LevelTable(self.levels, *(np.concatenate([getattr(self, name), getattr(other, name)]) for name in
                                         ("tokens", "utility", "present", "unknown", "missing_utility")), self.count)


@dataclass(frozen=True, eq=False)
class Columns:
    """The valid records of a record set as columns; row i is ``records[i]``."""

    records: tuple[Record, ...]
    index: np.ndarray  # int64: each row's index in the record set's ``records`` (valid and invalid)
    timestamp: np.ndarray  # float64
    ttl: np.ndarray  # float64, NaN where the record's ttl is null or not given
    ttl_given: np.ndarray  # bool
    authority: np.ndarray  # bool
    tenant: Codes
    store: Codes
    session: Codes
    key: Codes
    version: Codes
    document: Codes
    time_kinds: tuple[str, ...]  # one per row
    _tables: dict[tuple[tuple[str, ...], str], LevelTable] = field(default_factory=dict, repr=False)
    _memo: dict[tuple[Any, ...], Any] = field(default_factory=dict, repr=False)
    _parent: tuple[Columns, np.ndarray] | None = field(default=None, repr=False)  # (columns, rows) taken from

    @classmethod
    def of(cls, records: Sequence[Record], index: Sequence[int]) -> Columns:
        held = tuple(records)
        if _SCANS is not None:  # the same columns, each one C loop over the records
            floats = {name: np.frombuffer(_SCANS.floats(held, name), dtype=np.float64) for name in ("timestamp", "ttl")}
            flags = {name: np.frombuffer(_SCANS.flags(held, name), dtype=bool) for name in ("ttl_given", "authority")}
            strings = {name: Codes.compiled(held, name) for name in _STRING_FIELDS}
        else:
            floats = {"timestamp": np.array([r.timestamp for r in held], dtype=np.float64),
                      "ttl": np.array([r.ttl for r in held], dtype=np.float64)}  # None: NaN
            flags = {name: np.array([getattr(r, name) for r in held], dtype=bool)
                     for name in ("ttl_given", "authority")}
            strings = {name: Codes.of([getattr(r, name) for r in held]) for name in _STRING_FIELDS}
        return cls(records=held, index=np.asarray(index, dtype=np.int64), **floats, **flags, **strings,
                   time_kinds=tuple(r.time_kind for r in held))

    def __len__(self) -> int:
        return len(self.records)

    def memo(self, key: tuple[Any, ...], build: Callable[[], T]) -> T:
        """``build()``, kept under ``key`` for the next turn: what a rule derives from the records
        and the policy alone (a store mask, the latest record per key) is computed once."""
        try:
            return self._memo[key]  # type: ignore[no-any-return]
        except KeyError:
            if len(self._memo) >= _MEMO_SIZE:  # many sessions or queries over one set: start again
                self._memo.clear()
            value = self._memo[key] = build()
            return value

    def take(self, rows: np.ndarray) -> Columns:
        """The rows ``rows`` (ascending) as columns of their own; level tables are shared."""
        return Columns(
            tuple(self.records[i] for i in rows.tolist()), self.index[rows], self.timestamp[rows], self.ttl[rows],
            self.ttl_given[rows], self.authority[rows], self.tenant.take(rows), self.store.take(rows),
            self.session.take(rows), self.key.take(rows), self.version.take(rows), self.document.take(rows),
            tuple(self.time_kinds[i] for i in rows.tolist()), _parent=(self, rows),
        )

    def extended(self, more: Columns) -> Columns:
        """These rows, then ``more``'s (its ``index`` already counts this set's records): the
        arrays are joined and the level tables extended by the new rows only; what a rule
        derived over the old rows is derived again (every row may depend on the new ones)."""
        tables = {key: table.extended(more.records) for key, table in self._all_tables().items()}
        return Columns(
            self.records + more.records, np.concatenate([self.index, more.index]),
            *(np.concatenate([getattr(self, name), getattr(more, name)])
              for name in ("timestamp", "ttl", "ttl_given", "authority")),
            *(getattr(self, name).extended(getattr(more, name))
              for name in ("tenant", "store", "session", "key", "version", "document")),
            self.time_kinds + more.time_kinds, tables,
        )

    def reindexed(self, index: np.ndarray) -> Columns:
        """The same rows, placed at ``index`` in their record set (after records were removed)."""
        return replace(self, index=index, _memo={})

    def _all_tables(self) -> dict[tuple[tuple[str, ...], str], LevelTable]:
        if self._parent is None:
            return dict(self._tables)
        parent, rows = self._parent
        return {key: table.take(rows) for key, table in parent._all_tables().items()} | self._tables

    def levels(
        self, fidelity: Sequence[str], counter_name: str, counter: Callable[[], Callable[[str], int]]
    ) -> LevelTable:
        """The levels in ``fidelity`` order, a level without a token count counted from its text
        with the counter named ``counter_name`` (``counter()`` makes it, when a table is built);
        built once per fidelity list and counter."""
        key = (tuple(fidelity), counter_name)
        table = self._tables.get(key)
        if table is None:
            if self._parent is not None:
                parent, rows = self._parent
                table = parent.levels(fidelity, counter_name, counter).take(rows)
            else:
                table = _level_table(self.records, key[0], counter())
            self._tables[key] = table
        return table


def _level_table(records: Sequence[Record], levels: tuple[str, ...], count: Callable[[str], int]) -> LevelTable:
    column = {name: j for j, name in enumerate(levels)}
    n, k = len(records), len(levels)
    laid = _compiled_cells(records, column, k, count)
    if laid is not None:
        at, sizes, values, unknown_rows = laid
    else:
        # one pass collecting (cell, tokens, utility) in lists, then one assignment per array: setting
        # numpy cells one by one cost three times as much
        cells: list[int] = []
        counted: list[int] = []
        given: list[float] = []
        unknown_rows = []
        nan = float("nan")
        for row, record in enumerate(records):
            for level in record.levels:
                j = column.get(level.name)
                if j is None:
                    unknown_rows.append(row)
                    continue
                cells.append(row * k + j)
                size = level.tokens
                counted.append(size if size is not None else _counted(count, level, record))
                given.append(nan if level.utility is None else level.utility)
        at, sizes, values = np.array(cells, dtype=np.int64), counted, given
    tokens = np.zeros(n * k, dtype=np.int64)
    utility = np.zeros(n * k, dtype=np.float64)
    present = np.zeros(n * k, dtype=bool)
    tokens[at], utility[at], present[at] = sizes, values, True
    utility = utility.reshape(n, k)
    unknown = np.zeros(n, dtype=bool)
    unknown[unknown_rows] = True
    missing = np.isnan(utility).any(axis=1)
    return LevelTable(levels, tokens.reshape(n, k), utility, present.reshape(n, k), unknown, missing, count)


def _compiled_cells(records: Sequence[Record], column: dict[str, int], k: int, count: Callable[[str], int]
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[int]] | None:
    """The level table's cells, token counts, utilities and rows with an unknown level by the
    compiled loop (``_scan.c``); None without it, or for records built by hand with values the
    loader never gives (a token count that is no int): the Python loop takes those."""
    if _SCANS is None:
        return None
    held = tuple(records)
    try:
        cells, sizes, values, unknown_rows, uncounted = _SCANS.level_cells(held, column, k)
    except TypeError:
        return None
    at = np.frombuffer(cells, dtype=np.int64)
    counted = np.frombuffer(sizes, dtype=np.int64)
    for position, level in uncounted:  # a level without a token count: its text (or its record's) counted
        counted[position] = _counted(count, level, held[int(at[position]) // k])
    return at, counted, np.frombuffer(values, dtype=np.float64), unknown_rows


def _counted(count: Callable[[str], int], level: Level, record: Record) -> int:
    """A level's token count from its text, else its record's ("" without either)."""
    return count(level.text if level.text is not None else record.text or "")
