"""Compile eligible records into an :class:`Instance`, and invert a solution into allocations.

``compile_records`` builds the instance; :meth:`Compiled.invert` maps an engine's answer back
to one :class:`Allocation` per record (cvxpy's apply/invert): engines never see record ids, and
the result, ``explain`` and ``audit`` read allocations, never rows.

Per record: levels ordered by the policy's fidelity list; token counts from the record or
counted from the level's text; utilities from the record or derived from relevance; then the
monotonicity repair (a higher fidelity never has lower utility than a lower one: running
maximum from the lowest level up), each repair kept for the trace.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..policies.verdicts import number
from ..records import DELETE, Record
from .instance import MAX_SCALE, Instance, Solution
from .reduce import Reduction


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
    derived: Derived | None = None

    @property
    def selected(self) -> bool:
        return self.level != DELETE

    @property
    def text(self) -> str | None:
        """The chosen level's text (the record's text when the level has none; None when deleted)."""
        for level in self.record.levels:
            if level.name == self.level:
                return level.text if level.text is not None else self.record.text
        return None

    def to_dict(self) -> dict[str, Any]:
        """The trace's ``allocation`` entry."""
        out: dict[str, Any] = {"level": self.level, "offered": [o.to_dict() for o in self.offered]}
        if self.decided_by is not None:
            out["decided_by"] = self.decided_by
        return out


@dataclass(frozen=True)
class Compiled:
    """The instance and what is needed to read its solution as records and levels."""

    instance: Instance
    records: tuple[Record, ...]  # one per row
    levels: tuple[str, ...]  # one per column, highest fidelity first
    repairs: Mapping[int, tuple[Repair, ...]]  # by row
    derived: Mapping[int, Derived]  # by row
    scores: np.ndarray | None  # relevance scores per row, for the greedy ranking

    def invert(
        self, solution: Solution, reduction: Reduction | None, scale: float = MAX_SCALE
    ) -> tuple[Allocation, ...]:
        """One allocation per row, in row order: the chosen level, the offer, and why a record
        was dropped (each reason computed once per record: linear in the number of records).
        ``scale`` is the one the engines solved at (:func:`.instance.scale`): values below
        1/(2·scale) count as nothing, and a record dropped for that says so."""
        inst = self.instance
        tokens, utility, mask = inst.tokens.tolist(), inst.utility.tolist(), inst.mask.tolist()
        net = inst.net().tolist()
        choice = solution.choice.tolist()
        searched = None if reduction is None else (reduction.keep.sum(axis=1) > 1).tolist()
        full = inst.max_records is not None and solution.count >= inst.max_records
        out = []
        for row, record in enumerate(self.records):
            offered = tuple(
                Offer(self.levels[j], tokens[row][j], utility[row][j], utility[row][j] - inst.price * tokens[row][j])
                for j in range(inst.k) if mask[row][j]
            )
            j = choice[row]
            decided = None if searched is None else ("search" if searched[row] else "bound")
            if j >= 0:
                level, size, value, reason = self.levels[j], tokens[row][j], utility[row][j], None
            else:
                level, size, value = DELETE, 0, 0.0
                reason = _drop_reason(inst, tokens[row], mask[row], net[row], full, scale)
            out.append(Allocation(record, row, level, size, value, offered, decided, reason,
                                  self.repairs.get(row, ()), self.derived.get(row)))
        return tuple(out)


def _drop_reason(
    inst: Instance, tokens: list[int], mask: list[bool], net: list[float], full: bool, scale: float
) -> str:
    fits = [m and t <= inst.budget for t, m in zip(tokens, mask, strict=True)]
    if not any(mask):
        return "no representation offered"
    if not any(fits):
        return f"no level fits the budget of {inst.budget} tokens"
    best = max(v for f, v in zip(fits, net, strict=True) if f)
    if best <= 0:
        return f"no level is worth its price ({number(inst.price)} per token)"
    if full:
        return f"not among the best {inst.max_records} records (count limit)"
    if best * scale <= 0.5:  # rounds to a scaled value of 0: worth nothing to the exact engines
        return (f"worth {best:.3g}, below the solver's resolution of {0.5 / scale:.3g} at this instance's "
                "scale (see README, Numbers)")
    return "not worth its tokens within the budget"


def compile_records(
    records: Sequence[Record],
    fidelity: Sequence[str],
    budget: int,
    price: float,
    max_records: int | None,
    count_tokens: Callable[[str], int],
    scores: Sequence[float | None] | None = None,
    retention: Mapping[str, float] | None = None,
    temperature: float = 0.05,
    ceilings: Mapping[str, str] | None = None,
) -> Compiled:
    """Build the instance; ``scores`` (relevance, one per record, None where the record has
    none) supply utilities a record does not carry; ``ceilings`` (record id → level) withhold
    every level above a record's ceiling."""
    levels = tuple(fidelity)
    column = {name: j for j, name in enumerate(levels)}
    n, k = len(records), len(levels)
    tokens = np.zeros((n, k), dtype=np.int64)
    utility = np.zeros((n, k), dtype=np.float64)
    mask = np.zeros((n, k), dtype=bool)
    repairs: dict[int, tuple[Repair, ...]] = {}
    derived: dict[int, Derived] = {}
    known = [s for s in scores if s is not None] if scores is not None else []
    best_score = max(known, default=0.0)
    retention = retention or {}

    for row, record in enumerate(records):
        lowest_allowed = column.get((ceilings or {}).get(record.id, levels[0]), 0)
        for level in record.levels:
            j = column[level.name]  # admission has rejected unknown level names
            mask[row, j] = j >= lowest_allowed  # fidelity never rises across rounds
            text = level.text if level.text is not None else record.text or ""
            tokens[row, j] = level.tokens if level.tokens is not None else count_tokens(text)
            if level.utility is not None:
                utility[row, j] = level.utility
            else:  # admission guarantees a score exists when a utility is missing
                score = scores[row]  # type: ignore[index]
                assert score is not None
                sharpened = math.exp((score - best_score) / temperature)
                derived[row] = Derived(score, best_score, temperature, sharpened)
                utility[row, j] = retention.get(level.name, 1.0 if j == 0 else 0.0) * sharpened
        fixed = []
        running = 0.0
        for j in range(k - 1, -1, -1):
            if not mask[row, j]:
                continue
            if utility[row, j] < running:
                fixed.append(Repair(levels[j], float(utility[row, j]), running))
                utility[row, j] = running
            running = float(utility[row, j])
        if fixed:
            repairs[row] = tuple(reversed(fixed))

    instance = Instance(tokens, utility, mask, budget, price, max_records)
    # the greedy ranks by relevance when any record has a score
    row_scores = np.array([0.0 if s is None else s for s in scores]) if known else None
    return Compiled(instance, tuple(records), levels, repairs, derived, row_scores)
