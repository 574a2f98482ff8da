"""Load memory records: JSON, JSON Lines or YAML → schema → semantic checks → :class:`RecordSet`.

A problem with one record (a negative token count, a NaN, a duplicate id) does not stop the
load: the record is kept as an :class:`InvalidRecord` carrying its error, and the policy's
``on_invalid_record`` decides at solve time whether that fails the run or excludes the record.
A problem with the file as a whole (unparseable, wrong top-level shape) is raised at once.

A record's identity is (tenant, id): the same id under two tenants is two records. A run for a
tenant sees only that tenant's records (:meth:`RecordSet.view`); the others are counted, never
described, and nothing about them (a duplicate, a bad value, another kind of time) can fail or
change the tenant's run.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import cached_property
from itertools import compress, repeat
from operator import attrgetter, eq, is_, is_not
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import orjson

from . import collection, decode, schemas
from .columns import Columns
from .compiled import scans
from .context import CONTEXT_FIELDS, Context
from .decode import UNSET, Decoded, DecodedRecord
from .errors import InputError, Location, not_finite, shown
from .level import Level, named_levels
from .source import (
    MAX_DEPTH,
    MAX_INTEGER,
    MAX_TOKENS,
    MAX_UTILITY,
    STDIN,
    Document,
    JsonlLines,
    check_structure,
    counted_keys,
    find_non_finite,
    format_of,
    json_value,
    jsonl_document,
    jsonl_line_may_break_limits,
    jsonl_lines,
    load_document,
    nameable,
    nesting_may_break_limit,
    read_text,
    refuse_lone_surrogates,
    string_may_break_limit,
)
from .timeutil import NUMBER, RFC3339, TimeValueError, parse_duration, parse_timestamp, time_kind

DELETE = "delete"  # the level every record has implicitly: not kept (0 tokens, 0 utility)


class Record(msgspec.Struct, frozen=True, gc=False):
    """One memory item, validated.

    A frozen msgspec Struct rather than a dataclass: a frozen dataclass sets each field through
    ``object.__setattr__`` and keeps them in a dict, several times the cost of the rest of a
    record's load, and a million records are loaded at once. No cycle can pass through a record
    (it holds strings, numbers and tuples of levels), so the collector need not track it."""

    id: str
    position: int  # input order, 0-based
    timestamp: float  # plain number, or seconds since the epoch for RFC 3339
    levels: tuple[Level, ...]
    tenant: str | None = None
    store: str | None = None
    session: str | None = None
    key: str | None = None
    ttl: float | None = None  # None with ttl_given: never expires
    ttl_given: bool = False
    authority: bool = False
    version: str | None = None
    document: str | None = None
    text: str | None = None
    time_kind: str = "number"  # of its timestamp: "number" or "rfc3339"
    covers: tuple[str, ...] = ()  # other records' ids this one holds what they hold (an extracted fact)
    score: float | None = None  # an external relevance score in [0, 1] (a store's search, an embedding)


@dataclass(frozen=True)
class InvalidRecord:
    """A record that failed validation; kept so the trace can say why it is left out."""

    id: str | None
    position: int
    error: InputError
    tenant: str | None = None  # as written, when it is a string: whose input error this is


AnyRecord = Record | InvalidRecord
_TENANT, _IDENTITY = attrgetter("tenant"), attrgetter("tenant", "id")  # a record's identity: (tenant, id)
_ID, _METADATA = attrgetter("id"), attrgetter("metadata")


@dataclass(frozen=True)
class ActionValues:
    original: tuple[float, ...]
    compressed: tuple[float, ...]


@dataclass(frozen=True)
class RecordSet:
    """All input records in input order, valid or not, with the file's context fields."""

    records: tuple[AnyRecord, ...]
    context: Context = Context()  # the context fields the file carries (a case object)
    actions: ActionValues | None = None
    file: str | None = None
    sha256: str = ""
    source: Document | None = field(default=None, compare=False, repr=False)
    prefix: tuple[Any, ...] = ()  # path of the record list inside the file
    appended: tuple[tuple[int, RecordSet], ...] = ()  # (first position, its set): records added later
    other_tenants: int = 0  # records of other tenants left out of this view (counted, never described)

    @property
    def valid(self) -> list[Record]:
        return [r for r in self.records if isinstance(r, Record)]

    @property
    def invalid(self) -> list[InvalidRecord]:
        return [r for r in self.records if isinstance(r, InvalidRecord)]

    def locate(self, *path: Any) -> Location:
        if self.source is None:
            return Location(self.file, path=".".join(map(str, path)))
        return self.source.locate(path)

    def locate_field(self, position: int, *path: Any) -> Location:
        """Where a field of the record at ``position`` was written (in the file it came from)."""
        for start, part in reversed(self.appended):
            if position >= start:
                return part.locate_field(position - start, *path)
        return self.locate(*self.prefix, position, *path)

    def extended(self, more: RecordSet) -> RecordSet:
        """This set with ``more``'s records after its own (positions continue; each record is still
        located in the file it came from). A record of ``more`` whose (tenant, id) this set holds
        already is a duplicate: kept as invalid, as on load."""
        held = {(r.tenant, r.id) for r in self.valid}
        more = replace(more, records=tuple(
            _duplicate(r, more.locate_field(r.position, "id")) if isinstance(r, Record) and (r.tenant, r.id) in held
            else r
            for r in more.records
        ))
        start = max((r.position for r in self.records), default=-1) + 1  # after any removed ones too
        moved = tuple(_moved(r, r.position + start) for r in more.records)
        digest = hashlib.sha256(f"{self.sha256}+{more.sha256}".encode()).hexdigest()
        out = replace(self, records=self.records + moved, sha256=digest, appended=self.appended + ((start, more),))
        _carry_columns(self, out, self.records + moved)
        for tenant, view in self._views.items():  # and each tenant's view, by that tenant's new records
            mine = view.records + tuple(r for r in moved if r.tenant == tenant)
            out._views[tenant] = replace(out, records=mine, other_tenants=out.other_tenants + len(out.records)
                                         - len(mine))
            _carry_columns(view, out._views[tenant], mine)
        return out

    def without(self, keep: Sequence[bool], sha256: str) -> RecordSet:
        """The records whose ``keep`` is true (one flag per record), the built columns and each
        tenant's view carried."""
        if len(keep) != len(self.records):
            raise ValueError(f"{len(keep)} flags for {len(self.records)} records")
        out = replace(self, records=tuple(compress(self.records, keep)), sha256=sha256)
        if "columns" in self.__dict__:
            out.__dict__["columns"] = _kept_columns(self.columns, keep)
        gone = {id(r) for r, kept in zip(self.records, keep, strict=True) if not kept} if self._views else set()
        for tenant, view in self._views.items():
            mine = [id(r) not in gone for r in view.records]
            kept = view.without(mine, sha256)
            out._views[tenant] = replace(kept, other_tenants=out.other_tenants + len(out.records) - mine.count(True))
            if "columns" in kept.__dict__:
                out._views[tenant].__dict__["columns"] = kept.columns
        return out

    def view(self, tenant: str | None) -> RecordSet:
        """The records one tenant's run sees: all of them when no tenant is in force; else that
        tenant's, the rest (other tenants', untenanted, unreadable) only counted. A view is made
        once per tenant and kept, with its columns, for the next turn."""
        if tenant is None:
            return self
        seen = self._views.get(tenant)
        if seen is None:
            keep = list(map(eq, map(_TENANT, self.records), repeat(tenant)))  # loops in C
            seen = self.without(keep, self.sha256)
            columns = seen.__dict__.get("columns")
            seen = replace(seen, other_tenants=self.other_tenants + len(self.records) - len(seen.records))
            if columns is not None:
                seen.__dict__["columns"] = columns
            self._views[tenant] = seen
        return seen

    def refused(self, invalid: Mapping[int, InvalidRecord]) -> RecordSet:
        """This set with the records at these rows of its columns refused (admission): each
        replaced by its InvalidRecord, and the columns kept for the rest."""
        cols = self.columns
        records = list(self.records)
        for row, refusal in invalid.items():
            records[int(cols.index[row])] = refusal
        out = replace(self, records=tuple(records))
        out.__dict__["columns"] = cols.take(np.setdiff1d(np.arange(len(cols)), list(invalid)))
        return out

    @cached_property
    def _views(self) -> dict[str, RecordSet]:
        return {}

    @cached_property
    def columns(self) -> Columns:
        """The valid records as columns (built on first use, then kept with this set)."""
        records = self.records
        valid = list(map(isinstance, records, repeat(Record)))  # loops in C
        if False not in valid:
            return Columns.of(records, range(len(records)))  # type: ignore[arg-type]
        return Columns.of(list(compress(records, valid)), list(compress(range(len(records)), valid)))

    @property
    def count(self) -> int:
        """Records read: this view's and the ones counted for other tenants."""
        return len(self.records) + self.other_tenants

    def time_kind(self) -> str | None:
        """The one kind of time of the valid records ("number" or "rfc3339"; None without any);
        a view that mixes kinds is an input error at the first record of the other kind."""
        kinds = set(self.columns.time_kinds)
        if len(kinds) < 2:
            return next(iter(kinds), None)
        first: Record | None = None
        for record in self.valid:
            if first is None:
                first = record
            elif record.time_kind != first.time_kind:
                raise InputError(
                    f"mixed time kinds: this timestamp is {record.time_kind} but record `{shown(first.id)}` uses "
                    f"{first.time_kind}; use plain numbers everywhere or RFC 3339 everywhere",
                    self.locate_field(record.position, "timestamp"),
                )
        return None if first is None else first.time_kind


def load_records(source: str | Path | Sequence[Any] | Mapping[str, Any]) -> RecordSet:
    """Load records from a file path, or from already-parsed data (a list or a case object)."""
    with collection.paused():  # a million records are millions of objects the collector would rescan
        if isinstance(source, (str, Path)):
            if str(source) != STDIN and format_of(source) == "jsonl":
                text, raw = read_text(source)
                sha256 = hashlib.sha256(raw).hexdigest()
                return _jsonl(text, str(source), sha256, raw)
            doc, raw = load_document(source)
            return _build(doc, hashlib.sha256(raw).hexdigest())
        doc = Document("<records>", "", source, "data")
        # orjson's bytes stand only for a list of records (_plain_records): a case object is not tried
        quick = _quick_canonical(source) if isinstance(source, list) else None
        canonical = _canonical(source) if quick is None else quick
        # a surrogate, lone or in a pair (any character past U+FFFF): each record is looked at
        built = _build(doc, "", _SURROGATE_ESCAPE.search(canonical) is not None)
        if quick is not None and not _plain_records(source, built):
            canonical = _canonical(source)  # values where orjson and the standard library may differ
        return replace(built, sha256=hashlib.sha256(canonical).hexdigest())


_SURROGATE_ESCAPE = re.compile(rb"\\ud[89a-f]")
_QUICK = orjson.OPT_SORT_KEYS | orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATETIME \
    | orjson.OPT_PASSTHROUGH_DATACLASS
_NON_ASCII = re.compile(r"[^\x00-\x7f]")
_PLAIN_TYPES = (str, int, float, bool, type(None))


def _quick_canonical(data: Any) -> bytes | None:
    """:func:`_canonical`'s bytes written by orjson (ten times faster), or None where they may
    differ from the standard library's: a value orjson does not take as it is (a subclass of
    str, int, dict or list, a number past 64 bits, a key that is no string, a date, a lone
    surrogate: it raises), a number it writes otherwise (:func:`_own_number`), DEL (which the
    standard library escapes). Non-ASCII characters are escaped as the standard library escapes
    them. Still unsure after this: NaN (orjson writes null) and a plain Enum (orjson writes its
    value) in a value a record's checks do not type: see :func:`_plain_records`."""
    try:
        written = orjson.dumps(data, option=_QUICK)
    except (TypeError, orjson.JSONEncodeError):
        return None
    if b"\x7f" in written or _own_number(written):
        return None
    if written.isascii():
        return written
    return _NON_ASCII.sub(_escaped, written.decode("utf-8")).encode("ascii")


def _own_number_numpy(written: bytes) -> bool:
    """Whether compact JSON may hold a number orjson writes otherwise than repr: with an exponent
    (a digit, `e`, then a digit or a sign) or positionally below 1e-4 (`0.0000`). A match inside
    a string only costs time (the standard library writes that text); a regular expression over
    every digit cost as much as orjson's whole writing. ``_scan.c``'s one pass where built."""
    if b"0.0000" in written:
        return True
    data = np.frombuffer(written, dtype=np.uint8)
    at = np.flatnonzero(data[1:-1] == ord("e")) + 1
    before, after = data[at - 1], data[at + 1]
    digit_before = (before >= ord("0")) & (before <= ord("9"))
    exponent = ((after >= ord("0")) & (after <= ord("9"))) | (after == ord("-")) | (after == ord("+"))
    return bool((digit_before & exponent).any())


_own_number: Callable[[bytes], bool] = getattr(scans(), "own_number", _own_number_numpy)


def _escaped(match: re.Match[str]) -> str:
    """A character past ASCII as the standard library's ensure_ascii writes it (past U+FFFF: its
    UTF-16 surrogate pair)."""
    code = ord(match.group())
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 | (code >> 10):04x}\\u{0xDC00 | (code & 0x3FF):04x}"


def _plain_records(data: Any, built: RecordSet) -> bool:
    """Whether orjson's canonical bytes of ``data`` are the standard library's: a list of records
    that all loaded (each one's fields typed by the checks: finite numbers, strings, lists of
    strings), their ``metadata``, if any, of plain JSON values only."""
    if not isinstance(data, list) or len(built.records) != len(data) or built.invalid:
        return False
    return all(_plain_json(item["metadata"]) for item in data if "metadata" in item)


def _plain_json(value: Any) -> bool:
    """Whether a loaded record's metadata value holds only plain JSON types (its numbers are
    finite already: a record whose metadata holds NaN or an infinity does not load)."""
    kind = type(value)
    if kind in _PLAIN_TYPES:
        return True
    if kind is dict:
        return all(type(key) is str for key in value) and all(map(_plain_json, value.values()))
    return kind in (list, tuple) and all(map(_plain_json, value))


def _canonical(data: Any) -> bytes:
    """Python data as canonical JSON bytes, for its hash (sorted keys, no blanks; keys of mixed
    types, which do not sort, in their order); InputError for data JSON cannot hold (a cycle)."""
    try:
        try:
            text = json.dumps(data, sort_keys=True, default=str, separators=(",", ":"))
        except TypeError:  # keys that do not compare (1 and "a")
            text = json.dumps(data, default=str, separators=(",", ":"))
    except ValueError as exc:  # "Circular reference detected"
        raise InputError(f"records that hold themselves cannot be read ({exc}); give plain data",
                         Location("<records>")) from None
    except RecursionError:
        raise InputError(f"nesting deeper than {MAX_DEPTH} levels", Location("<records>")) from None
    return text.encode("utf-8")  # ASCII: json.dumps escapes the rest


def _jsonl(text: str, file: str, sha256: str, raw: bytes | None = None, fast: bool = True) -> RecordSet:
    """A JSON Lines text. Each line is one record, read on its own: what is wrong with a line (not
    JSON, a key written twice, a limit passed) is that record's input error, and another tenant's
    never fails this tenant's run. Lines take the fast path (``memsolve.decode``) where it can
    vouch for them (``fast``), else the exact path line by line: the strict parser, the limits on
    the line's own value (:func:`source.check_structure`), then the schema and the checks.
    ``raw``: the UTF-8 bytes the text was read from, where known (scanned for the key count)."""
    line_of = jsonl_lines(text)
    doc = jsonl_document(text, file, line_of, None)  # the records are built here, not kept as dicts
    if len(line_of) > MAX_RECORDS:
        raise doc.error((), f"{len(line_of):,} records, more than the limit of {MAX_RECORDS:,}")
    decoded = _decoded(text, line_of, raw) if fast else None

    def line_at(position: int) -> Any:  # JSON with no key written twice, or that line's input error
        number, line = line_of[position]
        return json_value(line, file, number - 1, 1)

    def check(item: Any, path: tuple[Any, ...]) -> None:  # the limits, on the line's own value
        if jsonl_line_may_break_limits(line_of[path[0]][1]):
            check_structure(doc, item, path)

    return _collected(doc, sha256, (), len(line_of), line_at, decoded, check=check)


def _decoded(text: str, line_of: JsonlLines, raw: bytes | None = None) -> list[Decoded] | None:
    """Each line decoded by the fast path, None for a line the exact path must read (one the types
    refuse, or that may hold a string past the limit or `metadata` nested past it: the other
    fields nest four levels at most); None for every line where a key may be written twice
    (msgspec keeps the last one silently)."""
    keys = counted_keys(text, raw)
    if keys is None:
        return None
    lines = line_of.texts
    decoded = decode.lines(lines)
    long_lines = string_may_break_limit(text) and string_may_break_limit(max(lines, key=len, default=""))
    if long_lines or any(map(is_not, map(_METADATA, filter(None, decoded)), repeat(None))):
        for position in [position for position, item in enumerate(decoded)
                         if item is not None and (long_lines or item.metadata is not None)]:
            line = lines[position]
            if string_may_break_limit(line) or decoded[position].metadata is not None and nesting_may_break_limit(line):
                decoded[position] = None
    if any(map(is_, decoded, repeat(None))):  # no __eq__ of each decoded value, as `None in` would call
        keys -= sum(lines[position].count('":') for position, item in enumerate(decoded) if item is None)
    return decoded if decode.keys_kept(keys, decoded) else None


def _build(doc: Document, sha256: str, surrogates: bool = False, fast: bool = True) -> RecordSet:
    """The record set of a parsed document; ``surrogates``: Python data that may hold a lone
    surrogate (looked for outside the records, and in each record as that record's error);
    records of JSON's own types take the fast path (``memsolve.decode.items``) where ``fast``."""
    data = doc.data
    if data is None:
        data = []  # an empty YAML or JSON Lines file holds no records
    prefix: tuple[Any, ...] = ()
    if isinstance(data, dict):
        for key in ("original_action_values", "compressed_action_values", "budget", "now"):
            bad = find_non_finite(data.get(key), (key,))
            if bad is not None:
                raise doc.error(bad[0], not_finite(bad[1]))
    # the file's shape; each record is checked on its own below (so one bad record can be excluded)
    # (an entry that is not a mapping is that entry's problem, not the file's: it may be another tenant's)
    shape = {**data, "records": []} if isinstance(data, dict) and isinstance(data.get("records"), list) else data
    if not isinstance(shape, list):
        schemas.check(doc, shape, "records")
    if isinstance(data, dict):
        items, prefix = data["records"], ("records",)
        context = Context(**{name: data[name] for name in CONTEXT_FIELDS if name in data})
        context = replace(context, current_versions=dict(context.current_versions))
        actions = _actions(doc, data)
    else:
        items, context, actions = data, Context(), None

    if len(items) > MAX_RECORDS:
        raise doc.error(prefix, f"{len(items):,} records, more than the limit of {MAX_RECORDS:,}")
    check = None
    if surrogates:
        if isinstance(data, dict):
            refuse_lone_surrogates(doc, shape)

        def check(item: Any, path: tuple[Any, ...]) -> None:
            refuse_lone_surrogates(doc, item, path)
    decoded = decode.items(items) if fast else None
    if decoded is not None and check is not None:
        for position, item in enumerate(items):  # a record with a lone surrogate: the exact path words it
            try:
                if decoded[position] is not None:
                    check(item, prefix + (position,))
            except InputError:
                decoded[position] = None
    return _collected(doc, sha256, prefix, len(items), items.__getitem__, decoded, context, actions, check)


def _collected(
    doc: Document,
    sha256: str,
    prefix: tuple[Any, ...],
    count: int,
    item_at: Callable[[int], Any],
    decoded: Sequence[Decoded] | None,
    context: Context | None = None,
    actions: ActionValues | None = None,
    check: Callable[[Any, tuple[Any, ...]], None] | None = None,
) -> RecordSet:
    """The record set of ``count`` items: each built by the fast path from ``decoded`` where it
    can (memsolve.decode), else from ``item_at(position)`` by the exact path; a record in error,
    or a second one with an earlier record's (tenant, id), kept as invalid; ``check(item, path)``
    raises a record's own further error."""
    built: list[Record | None] = [None] * count if decoded is None else _decoded_records(decoded)
    if not any(map(is_, built, repeat(None))) and _distinct_identities(built):  # type: ignore[arg-type]
        # every record took the fast path and no (tenant, id) is written twice: nothing to word
        return RecordSet(tuple(built), context or Context(), actions, doc.file, sha256, doc, prefix)  # type: ignore[arg-type]
    records: list[AnyRecord] = []
    seen: set[tuple[str | None, str]] = set()  # (tenant, id)
    for position in range(count):
        record = built[position]
        if record is None:
            item, path = None, prefix + (position,)
            try:
                item = item_at(position)  # a line of JSON Lines that cannot be read raises here
                if check is not None:
                    check(item, path)
                record = _record(doc, item, position, path)
            except InputError as error:
                # named by its id and tenant where they can be written (one that breaks a limit cannot)
                fields = item if isinstance(item, dict) else {}
                rid = _plain(fields.get("id")) if nameable(fields.get("id")) else None
                tenant = _plain(fields.get("tenant")) if nameable(fields.get("tenant")) else None
                records.append(InvalidRecord(rid, position, error, tenant))
                if rid is not None:  # its (tenant, id) is taken: a later record with it is a duplicate
                    seen.add((tenant, rid))
                continue
        identity = (record.tenant, record.id)
        if identity in seen:
            records.append(_duplicate(record, doc.locate(prefix + (position, "id"))))
            continue
        seen.add(identity)
        records.append(record)
    return RecordSet(tuple(records), context or Context(), actions, doc.file, sha256, doc, prefix)


def _carry_columns(before: RecordSet, after: RecordSet, records: tuple[AnyRecord, ...]) -> None:
    """``after`` holds ``before``'s records and then more: extend ``before``'s columns, when
    built, by the valid ones of the rest (rather than build them all anew)."""
    if "columns" in before.__dict__:
        index = [i for i in range(len(before.records), len(records)) if isinstance(records[i], Record)]
        added = Columns.of([records[i] for i in index], index)  # type: ignore[misc]
        after.__dict__["columns"] = before.columns.extended(added)


def _kept_columns(columns: Columns, keep: Sequence[bool]) -> Columns:
    """The rows of ``columns`` whose record is kept, placed where the kept records now stand."""
    kept = np.array(keep, dtype=bool)
    rows = np.flatnonzero(kept[columns.index])
    return columns.take(rows).reindexed((np.cumsum(kept) - 1)[columns.index[rows]])


def _moved(record: AnyRecord, position: int) -> AnyRecord:
    """The record at another position (of a set it was appended to)."""
    if isinstance(record, Record):
        return msgspec.structs.replace(record, position=position)
    return replace(record, position=position)


def _duplicate(record: Record, where: Location) -> InvalidRecord:
    """A second record with the (tenant, id) of an earlier one: that tenant's input error."""
    error = InputError(f"duplicate record id `{shown(record.id)}`: an earlier record of the same tenant has it",
                       where)
    return InvalidRecord(record.id, record.position, error, record.tenant)


def _actions(doc: Document, data: Mapping[str, Any]) -> ActionValues | None:
    original = data.get("original_action_values")
    compressed = data.get("compressed_action_values")
    if original is None and compressed is None:
        return None
    if original is None or compressed is None:
        missing = "original_action_values" if original is None else "compressed_action_values"
        raise doc.error((), f"`{missing}` is required when the other action values are given")
    if len(original) != len(compressed):
        raise doc.error(
            ("compressed_action_values",),
            f"expected {len(original)} action values like original_action_values, got {len(compressed)}",
        )
    return ActionValues(tuple(map(float, original)), tuple(map(float, compressed)))


def _record(doc: Document, item: Any, position: int, path: tuple[Any, ...]) -> Record:
    if not isinstance(item, dict):  # named by type: its contents are never echoed
        raise doc.error(path, f"expected a mapping (a record), got {schemas.type_name(item)}")
    if isinstance(item.get("timestamp"), datetime):
        # YAML reads an unquoted timestamp as a datetime: check it as the RFC 3339 text it was
        item = {**item, "timestamp": item["timestamp"].isoformat()}
    if not looks_valid(item):  # the fast path; jsonschema words the error (and is the authority)
        bad = find_non_finite(item, path)
        if bad is not None:
            raise doc.error(bad[0], not_finite(bad[1]))
        schemas.check(doc, item, "records", "record", prefix=path)
        item = _plain_strings(item)
    try:
        timestamp = parse_timestamp(item["timestamp"])
    except TimeValueError as exc:
        raise doc.error(path + ("timestamp",), str(exc)) from None
    kind = time_kind(item["timestamp"]) or NUMBER

    ttl, ttl_given = None, "ttl" in item
    if item.get("ttl") is not None:
        try:
            ttl = parse_duration(item["ttl"], kind)
        except TimeValueError as exc:
            raise doc.error(path + ("ttl",), str(exc)) from None

    levels = _levels(doc, item, path)
    return Record(item["id"], position, timestamp, levels, item.get("tenant"), item.get("store"), item.get("session"),
                  item.get("key"), ttl, ttl_given, item.get("authority", False), item.get("version"),
                  item.get("document"), item.get("text"), kind, tuple(item.get("covers", ())),
                  _float(item.get("score")))


def _plain_strings(item: dict[str, Any]) -> dict[str, Any]:
    """A valid record with its strings as plain ``str``. Python data may hold a subclass (a str
    Enum, numpy's str_) that formats itself otherwise (`Key.PLAN`) while JSON writes its
    characters; a record's strings must read the same in every reason and piece of evidence.
    :func:`looks_valid` takes plain strings only, so only the records it declined come here."""
    out = {key: _plain(value) for key, value in item.items()}
    if isinstance(out.get("covers"), list):
        out["covers"] = [_plain(c) for c in out["covers"]]
    reps = out.get("representations")
    if isinstance(reps, dict):
        out["representations"] = {_plain(name): {key: [_plain(c) for c in value] if key == "covers" else _plain(value)
                                                 for key, value in spec.items()} for name, spec in reps.items()}
    return out


def _plain(value: Any) -> Any:
    """A string subclass as a plain ``str``; any other value as it is."""
    return str.__str__(value) if isinstance(value, str) and type(value) is not str else value


def _decoded_record(decoded: DecodedRecord, position: int) -> Record | None:
    """The Record the exact path (:func:`_record`) builds from this item (the fast path,
    memsolve.decode), or None where the exact path must word an error."""
    stamp = decoded.timestamp
    if type(stamp) is str:
        try:
            timestamp = parse_timestamp(stamp)
        except TimeValueError:
            return None
        kind = RFC3339  # the only text parse_timestamp reads
    else:
        kind, timestamp = NUMBER, float(stamp)
    ttl, ttl_given = decoded.ttl, True
    if ttl is UNSET:
        ttl, ttl_given = None, False
    elif ttl is not None:
        try:
            ttl = parse_duration(ttl, kind)
        except TimeValueError:
            return None
    if decoded.metadata is not None and find_non_finite(decoded.metadata) is not None:
        return None  # as the exact path (msgspec already refuses NaN and numbers past the float range)
    levels = _decoded_levels(decoded)
    if levels is None:
        return None
    covers, authority = decoded.covers, decoded.authority
    return Record(decoded.id, position, timestamp, levels, decoded.tenant, decoded.store, decoded.session, decoded.key,
                  ttl, ttl_given, False if authority is UNSET else authority, decoded.version, decoded.document,
                  decoded.text, kind, () if covers is None else covers, decoded.score)


def _distinct_identities(built: list[Record]) -> bool:
    """No two records share a (tenant, id); where every record has one tenant, the ids alone tell
    (no pair built per record)."""
    if len(set(map(_TENANT, built))) <= 1:
        return len(set(map(_ID, built))) == len(built)
    return len(set(map(_IDENTITY, built))) == len(built)


def _decoded_records_python(decoded: list[Decoded]) -> list[Record | None]:
    return [None if fast is None else _decoded_record(fast, position) for position, fast in enumerate(decoded)]


def _decoded_records(decoded: Sequence[Decoded]) -> list[Record | None]:
    """Each decoded item's Record at its position (:func:`_decoded_record`), None where the exact
    path must read it. The compiled scan builds the records without metadata or a duration to
    parse, the rest (and all of them without a compiler) take :func:`_decoded_record`."""
    decoded = decoded if type(decoded) is list else list(decoded)
    if _records_of is None:
        return _decoded_records_python(decoded)
    built, todo = _records_of(decoded, DecodedRecord, Level, Record, UNSET, parse_timestamp, TimeValueError, RFC3339)
    for position in todo:
        built[position] = _decoded_record(decoded[position], position)  # type: ignore[arg-type]
    return built


# records_of(decoded, DecodedRecord, Level, Record, UNSET, parse_timestamp, TimeValueError, RFC3339)
# -> (records, todo): the records _decoded_record builds, but at the positions in todo (those it must take)
_records_of: Callable[..., tuple[list[Record | None], list[int]]] | None = getattr(scans(), "records_of", None)


def _decoded_levels(decoded: DecodedRecord) -> tuple[Level, ...] | None:
    utility = decoded.utility
    if utility is None:
        utility = decoded.decision_value
    elif decoded.decision_value is not None:
        return None
    tokens, text, reps = decoded.tokens, decoded.text, decoded.representations
    if reps is not None:
        if tokens is not None or utility is not None or not reps or DELETE in reps:
            return None
        return named_levels(reps, text)  # None: a level with nothing to size it by, which the exact path words
    if tokens is None and text is None:
        return None  # nothing to size the record by: the exact path says which
    return (Level("raw", tokens, utility, text),)


_FIELDS = frozenset(("id", "tenant", "store", "session", "key", "timestamp", "ttl", "authority", "version",
                     "document", "text", "tokens", "decision_value", "utility", "representations", "metadata",
                     "covers", "score"))
_LEVEL_FIELDS = frozenset(("tokens", "utility", "text", "covers"))
_STRINGS = ("tenant", "store", "session", "key", "version", "document", "text")


def _number(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return abs(value) <= MAX_INTEGER
    return isinstance(value, float) and math.isfinite(value)


def looks_valid(item: Any) -> bool:
    """A fast structural check that accepts only what records.schema.json's record accepts, and
    only plain ``str`` for the strings a record is worded by (see :func:`_plain_strings`).

    Validating 10,000 records with jsonschema costs seconds; this costs milliseconds. When it
    says no, jsonschema runs to produce the message (a property test keeps the two in step).
    """
    if not isinstance(item, dict) or not _FIELDS.issuperset(item):
        return False
    rid = item.get("id")
    if type(rid) is not str or not rid or "timestamp" not in item:
        return False
    stamp = item["timestamp"]
    if not (_number(stamp) or isinstance(stamp, str)):
        return False
    for name in _STRINGS:
        if name in item and type(item[name]) is not str:
            return False
    if "ttl" in item:
        ttl = item["ttl"]
        if not (ttl is None or isinstance(ttl, str) or (_number(ttl) and ttl >= 0)):
            return False
    if "authority" in item and not isinstance(item["authority"], bool):
        return False
    if "tokens" in item and not _count(item["tokens"]):
        return False
    for name in ("decision_value", "utility"):
        if name in item and not _utility(item[name]):
            return False
    if "decision_value" in item and "utility" in item:
        return False
    if "covers" in item and not _ids(item["covers"]):
        return False
    if "score" in item and not (_number(item["score"]) and 0 <= item["score"] <= 1):
        return False
    if "metadata" in item and (not isinstance(item["metadata"], dict) or find_non_finite(item["metadata"])):
        return False
    if "representations" in item:
        reps = item["representations"]
        if not isinstance(reps, dict) or not reps or DELETE in reps:
            return False
        for name, level in reps.items():
            if type(name) is not str or not isinstance(level, dict) or not _LEVEL_FIELDS.issuperset(level):
                return False
            if "tokens" in level and not _count(level["tokens"]):
                return False
            if "utility" in level and not _utility(level["utility"]):
                return False
            if "text" in level and type(level["text"]) is not str:
                return False
            if "covers" in level and not _ids(level["covers"]):
                return False
    return True


def _ids(value: Any) -> bool:
    return isinstance(value, list) and all(type(c) is str and c for c in value)


def _utility(value: Any) -> bool:
    return _number(value) and 0 <= value <= MAX_UTILITY


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_INTEGER


def _levels(doc: Document, item: Mapping[str, Any], path: tuple[Any, ...]) -> tuple[Level, ...]:
    utility = item.get("utility", item.get("decision_value"))
    shorthand = "tokens" in item or utility is not None
    if "representations" in item:
        if shorthand:
            raise doc.error(
                path + ("representations",),
                "give either `representations` or the `tokens`/`utility` shorthand, not both",
            )
        levels = []
        for name, spec in item["representations"].items():
            tokens, text, utility = spec.get("tokens"), spec.get("text"), spec.get("utility")
            if tokens is None and text is None and item.get("text") is None:
                # a level without either is sized by the record's text (and scored on it)
                raise doc.error(path + ("representations", name),
                                "a level needs `tokens` or `text` (or the record a `text`)")
            if tokens is not None and tokens > MAX_TOKENS:  # the path is built only for the error
                _check_tokens(doc, tokens, path + ("representations", name, "tokens"))
            covers = spec.get("covers")
            levels.append(Level(name, tokens, None if utility is None else float(utility), text,
                                () if covers is None else tuple(covers)))
        return tuple(levels)
    if shorthand or item.get("text") is not None:
        tokens = item.get("tokens")
        if tokens is None and item.get("text") is None:
            raise doc.error(path, "a record with a utility needs `tokens` or `text` to size it")
        _check_tokens(doc, tokens, path + ("tokens",))
        return (Level("raw", tokens, _float(utility), item.get("text")),)
    raise doc.error(path, "record has nothing to keep: give `representations`, `tokens` or `text`")


def _check_tokens(doc: Document, tokens: int | None, path: tuple[Any, ...]) -> None:
    if tokens is not None and tokens > MAX_TOKENS:
        raise doc.error(path, f"token count {tokens} is larger than the supported {MAX_TOKENS}")


MAX_RECORDS = 1_000_000


def _float(value: Any) -> float | None:
    return None if value is None else float(value)
