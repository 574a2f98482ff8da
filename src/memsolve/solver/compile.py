"""Compile eligible records into an :class:`Instance`, and invert a solution into allocations.

:func:`compile_rows` builds the instance from the records' level table (arrays, one row per
eligible record); :meth:`Compiled.invert` maps an engine's answer back to one :class:`Allocation`
per record (cvxpy's apply/invert): engines never see record ids, and the result, ``explain`` and
``audit`` read allocations, never rows. Allocations are built when read (:class:`Allocations`).

Per record: levels ordered by the policy's fidelity list; token counts from the record or
counted from the level's text; utilities from the record or derived from relevance (with a
utility model, DESIGN §11: p = σ(β·x + b) per level from that level's features,
:mod:`memsolve.utility_model`); then the monotonicity repair (a higher fidelity never has lower
utility than a lower one: running maximum from the lowest level up), each repair kept for the trace.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from ..columns import LevelTable
from ..policies.verdicts import number
from ..records import DELETE, Record
from .instance import MAX_SCALE, Instance, Solution
from .reduce import Reduction

if TYPE_CHECKING:  # the model module is imported only by policies that use one
    from ..utility_model import ModelInputs, Modelled


@dataclass(frozen=True)
class Repair:
    """A utility raised to the next lower level's, so that fidelity never lowers utility."""

    level: str
    utility_from: float
    utility_to: float

    def to_dict(self) -> dict[str, Any]:
        return {"level": self.level, "utility_from": self.utility_from, "utility_to": self.utility_to}


@dataclass(frozen=True)
class Derived:
    """How a derived utility came about: u = retention · exp((s − s_best) / T)."""

    score: float
    best_score: float
    temperature: float
    sharpened: float  # exp((s − s_best) / T)

    def to_dict(self) -> dict[str, Any]:
        return {"from": "relevance", "score": self.score, "best_score": self.best_score,
                "temperature": self.temperature, "sharpened": self.sharpened}


@dataclass(frozen=True)
class Offer:
    """One level offered to the allocation, with its net value at this round's price."""

    level: str
    tokens: int
    utility: float
    value: float

    def to_dict(self) -> dict[str, Any]:
        return {"level": self.level, "tokens": self.tokens, "utility": self.utility, "value": self.value}


@dataclass(frozen=True)
class Allocation:
    """What the allocation decided for one eligible record, and what it was offered."""

    record: Record
    row: int  # the record's row in the instance
    level: str  # a fidelity level, or DELETE
    tokens: int  # 0 when deleted
    utility: float
    offered: tuple[Offer, ...]
    decided_by: str | None  # "bound" or "search" when reductions ran
    drop_reason: str | None  # why a deleted record was left out
    repairs: tuple[Repair, ...] = ()
    derived: Derived | Modelled | None = None

    @property
    def selected(self) -> bool:
        return self.level != DELETE

    @property
    def text(self) -> str | None:
        """The chosen level's text (the record's text when the level has none; None when deleted)."""
        return level_text(self.record, self.level)

    def to_dict(self) -> dict[str, Any]:
        """The trace's ``allocation`` entry."""
        out: dict[str, Any] = {"level": self.level, "offered": [o.to_dict() for o in self.offered]}
        if self.decided_by is not None:
            out["decided_by"] = self.decided_by
        return out


@dataclass(frozen=True, eq=False)
class Compiled:
    """The instance and what is needed to read its solution as records and levels."""

    instance: Instance
    source: Sequence[Record]  # the records compiled from, row ``rows[r]`` of them for row r
    rows: np.ndarray
    levels: tuple[str, ...]  # one per column, highest fidelity first
    given: np.ndarray  # utilities before the monotonicity repair (n, k)
    sharpened: np.ndarray  # per row: exp((s − s_best) / T) where a utility was derived, else NaN
    row_scores: np.ndarray | None  # relevance scores per row
    best_score: float
    temperature: float
    scores: np.ndarray | None  # relevance scores per row, for the greedy ranking (None: no record has one)
    model: ModelInputs | None = None
    features: np.ndarray | None = None  # (n, k, len(FEATURES)) with a model: each level's features
    p: np.ndarray | None = None  # (n, k) with a model: each level's modelled probability
    modelled: np.ndarray | None = None  # bool (n, k): the levels whose utility the model gave

    @cached_property
    def records(self) -> tuple[Record, ...]:
        """The record of each row."""
        return tuple(self.source[i] for i in self.rows.tolist())

    def record(self, row: int) -> Record:
        return self.source[int(self.rows[row])]

    @cached_property
    def _repaired(self) -> np.ndarray:
        """Rows with a utility raised by the repair."""
        inst = self.instance
        return (inst.mask & (inst.utility > self.given)).any(axis=1)

    def repairs(self, row: int) -> tuple[Repair, ...]:
        """The utilities raised at one row, lowest fidelity last (as the trace lists them)."""
        if not self._repaired[row]:
            return ()
        inst = self.instance
        raised = np.flatnonzero(inst.mask[row] & (inst.utility[row] > self.given[row])).tolist()
        return tuple(Repair(self.levels[j], float(self.given[row, j]), float(inst.utility[row, j])) for j in raised)

    def annotated(self, rows: np.ndarray) -> np.ndarray:
        """Which of ``rows`` have :meth:`repairs` or a :meth:`derived` utility (the rest have neither)."""
        if self.model is not None:
            assert self.modelled is not None
            derived = self.modelled[rows].any(axis=1)
        else:
            derived = ~np.isnan(self.sharpened[rows])
        return self._repaired[rows] | derived

    def derived(self, row: int) -> Derived | Modelled | None:
        """How the row's utility was derived from its relevance score (None: it was given)."""
        if self.model is not None:
            return self._modelled(row)
        sharpened = float(self.sharpened[row])
        if math.isnan(sharpened):
            return None
        assert self.row_scores is not None
        return Derived(float(self.row_scores[row]), self.best_score, self.temperature, sharpened)

    def _modelled(self, row: int) -> Modelled | None:
        assert self.model is not None and self.features is not None and self.p is not None
        assert self.modelled is not None
        if not self.modelled[row].any():
            return None
        from ..utility_model import FEATURES, LevelUtility, Modelled

        names = self.model.model.features
        at = [FEATURES.index(f) for f in names]
        levels = tuple(
            LevelUtility(self.levels[j], {f: float(self.features[row, j, c]) for f, c in zip(names, at, strict=True)},
                         float(self.p[row, j]), float(self.given[row, j]))
            for j in np.flatnonzero(self.modelled[row]).tolist())
        return Modelled(self.model.model, levels)

    def invert(
        self, solution: Solution, reduction: Reduction | None, scale: float = MAX_SCALE
    ) -> Allocations:
        """One allocation per row, in row order: the chosen level, the offer, and why a record
        was dropped (each reason computed once per record: linear in the number of records).
        ``scale`` is the one the engines solved at (:func:`.instance.scale`): values below
        1/(2·scale) count as nothing, and a record dropped for that says so."""
        searched = None if reduction is None else reduction.keep.sum(axis=1) > 1
        full = self.instance.max_records is not None and solution.count >= self.instance.max_records
        return Allocations(self, solution.choice, searched, full, scale)


class Allocations(Sequence[Allocation]):
    """The allocation of every row of a compiled instance, each built when first read.

    ``choice``: int64 per row, the level's column, -1 deleted; ``searched``: bool per row, more
    than one level survived the reductions; ``full``: the count limit is reached. (A plain
    class, compared by identity: a dataclass costs ~0.7 ms to create at import.)"""

    __slots__ = ("compiled", "choice", "searched", "full", "scale", "_built", "_reasons")

    def __init__(self, compiled: Compiled, choice: np.ndarray, searched: np.ndarray | None, full: bool,
                 scale: float) -> None:
        self.compiled, self.choice, self.searched, self.full, self.scale = compiled, choice, searched, full, scale
        self._built: dict[int, Allocation] = {}
        self._reasons: dict[int, str] = {}

    def __repr__(self) -> str:
        return f"Allocations({len(self.choice)} rows)"

    def __len__(self) -> int:
        return len(self.choice)

    def __getitem__(self, row: int) -> Allocation:  # type: ignore[override]
        if row < 0:
            row += len(self)
        found = self._built.get(row)
        if found is None:
            found = self._build(row)
            self._built[row] = found
        return found

    def __iter__(self) -> Iterator[Allocation]:
        return (self[row] for row in range(len(self)))

    def of_rows(self, rows: list[int]) -> list[Allocation]:
        """The allocations of these rows (``[self[r] for r in rows]``), the missing ones built
        together: a full trace reads every row."""
        missing = [row for row in rows if row not in self._built]
        if missing:
            inst, at = self.compiled.instance, np.array(missing)
            for row, tokens, utility, mask in zip(missing, inst.tokens[at].tolist(), inst.utility[at].tolist(),
                                                  inst.mask[at].tolist(), strict=True):
                self._built[row] = self._build(row, tokens, utility, mask)
        return [self._built[row] for row in rows]

    def drop_reason(self, row: int) -> str:
        """Why a deleted row was left out (worded for every deleted row at once, on first use)."""
        if not self._reasons:
            dropped = np.flatnonzero(self.choice < 0)
            self._reasons.update(zip(dropped.tolist(), self.drop_reasons(dropped), strict=True))
        return self._reasons[row]

    def drop_reasons(self, rows: np.ndarray) -> list[str]:
        """Why each of these deleted rows was left out: the first that applies of no level
        offered, none fits the budget, none is worth its price, the count limit, a value below
        the solver's resolution, and not worth its tokens within the budget (array operations
        over the rows; only the resolution case words a number of its own)."""
        inst = self.compiled.instance
        if inst.k == 0 or not len(rows):
            return ["no representation offered"] * len(rows)
        mask, tokens = inst.mask[rows], inst.tokens[rows]
        fits = mask & (tokens <= inst.budget)
        best = np.where(fits, inst.utility[rows] - inst.price * tokens, -np.inf).max(axis=1)
        worth_nothing = f"no level is worth its price ({number(inst.price)} per token)"
        out = np.full(len(rows), "not worth its tokens within the budget", dtype=object)
        tiny = best * self.scale <= 0.5  # rounds to a scaled value of 0: worth nothing to the exact engines
        for i, value in zip(np.flatnonzero(tiny).tolist(), best[tiny].tolist(), strict=True):
            out[i] = (f"worth {value:.3g}, below the solver's resolution of {0.5 / self.scale:.3g} at this "
                      "instance's scale (see README, Numbers)")
        if self.full:
            out[:] = f"not among the best {inst.max_records} records (count limit)"
        # the earlier cases override the later ones: written last
        out[best <= 0] = worth_nothing
        out[~fits.any(axis=1)] = f"no level fits the budget of {inst.budget} tokens"
        out[~mask.any(axis=1)] = "no representation offered"
        return out.tolist()

    def _build(self, row: int, tokens: list[int] | None = None, utility: list[float] | None = None,
               mask: list[bool] | None = None) -> Allocation:
        """The row's allocation (its instance rows as lists, when the caller has them)."""
        compiled, inst = self.compiled, self.compiled.instance
        if tokens is None or utility is None or mask is None:
            tokens, utility, mask = inst.tokens[row].tolist(), inst.utility[row].tolist(), inst.mask[row].tolist()
        price, levels = inst.price, compiled.levels
        offered = tuple([Offer(levels[j], tokens[j], utility[j], utility[j] - price * tokens[j])
                         for j, present in enumerate(mask) if present])
        j = int(self.choice[row])
        decided = None if self.searched is None else ("search" if self.searched[row] else "bound")
        if j >= 0:
            level, size, value, reason = compiled.levels[j], tokens[j], utility[j], None
        else:
            level, size, value, reason = DELETE, 0, 0.0, self.drop_reason(row)
        return Allocation(compiled.record(row), row, level, size, value, offered, decided, reason,
                          compiled.repairs(row), compiled.derived(row))


def level_text(record: Record, level: str) -> str | None:
    """The text of a record's ``level`` (the record's text when the level has none; None when
    the record has no such level, as for delete)."""
    for offered in record.levels:
        if offered.name == level:
            return offered.text if offered.text is not None else record.text
    return None


def compile_rows(
    table: LevelTable,
    rows: np.ndarray,
    records: Sequence[Record],
    budget: int,
    price: float,
    max_records: int | None,
    scores: np.ndarray | None = None,
    retention: Mapping[str, float] | None = None,
    temperature: float = 0.05,
    ceilings: Mapping[str, str] | None = None,
    model: ModelInputs | None = None,
) -> Compiled:
    """Build the instance of the table's ``rows`` (``records[rows[r]]`` is row r's record);
    ``scores`` (relevance, one per row of the table, None without a query) supply utilities a
    record does not carry; ``ceilings`` (record id → level) withhold every level above a
    record's ceiling; ``model`` (with a query) gives missing utilities as the utility model's
    p per level, times the level's retention where the policy gives one."""
    levels = table.levels
    n, k = len(rows), len(levels)
    tokens = table.tokens[rows]
    given = table.utility[rows]  # a copy (fancy indexing): derived utilities are filled in below
    mask = table.present[rows]
    if ceilings:
        column = {name: j for j, name in enumerate(levels)}
        lowest = np.fromiter((column.get(ceilings.get(records[i].id, levels[0]), 0) for i in rows.tolist()),
                             dtype=np.int64, count=n)
        mask &= np.arange(k) >= lowest[:, None]  # fidelity never rises across rounds

    row_scores = None if scores is None else scores[rows]
    best_score = float(row_scores.max()) if row_scores is not None and n else 0.0
    sharpened = np.full(n, np.nan)
    missing = np.isnan(given)
    derive = np.flatnonzero(missing.any(axis=1))
    x = p = modelled = None
    if model is not None:
        from ..utility_model import features

        x = features(model.similarity[rows], tokens, mask, model.age[rows], model.external[rows],
                     None if model.extra is None else model.extra[rows])
        p = model.model.probability(x)
        kept = np.array([model.retention.get(name, 1.0) for name in levels])
        modelled = missing & mask
        given[missing] = (kept[None, :] * p)[missing]
    elif derive.size:  # admission guarantees a score wherever a utility is missing
        assert row_scores is not None
        # math.exp, as the evidence reports it (numpy's exp may differ in the last bit)
        sharpened[derive] = [math.exp((s - best_score) / temperature) for s in row_scores[derive].tolist()]
        retention = retention or {}
        kept = np.array([retention.get(name, 1.0 if j == 0 else 0.0) for j, name in enumerate(levels)])
        given[missing] = (kept[None, :] * sharpened[:, None])[missing]

    # the repair: each offered level worth at least the best offered level below it
    offered = np.where(mask, given, -np.inf)
    floor = np.maximum.accumulate(offered[:, ::-1], axis=1)[:, ::-1] if k else offered
    utility = np.where(mask, np.maximum(floor, given), given)

    instance = Instance(tokens, utility, mask, budget, price, max_records)
    greedy_scores = row_scores if row_scores is not None and n else None  # the greedy ranks by relevance
    return Compiled(instance, records, rows, levels, given, sharpened, row_scores, best_score, temperature,
                    greedy_scores, model, x, p, modelled)
