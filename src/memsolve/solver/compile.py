"""Compile eligible records into an :class:`Instance`, and map a solution back to records.

Per record: levels ordered by the policy's fidelity list; token counts from the record or
counted from the level's text; utilities from the record or derived from relevance; then the
monotonicity repair (a higher fidelity never has lower utility than a lower one: running
maximum from the lowest level up), each repair kept for the trace.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..records import Record
from .instance import Instance


@dataclass(frozen=True)
class Repair:
    level: str
    utility_from: float
    utility_to: float


@dataclass(frozen=True)
class Derived:
    """How a derived utility came about: u = retention · exp((s − s_best) / T)."""

    score: float
    best_score: float
    temperature: float
    sharpened: float  # exp((s − s_best) / T)


@dataclass(frozen=True)
class Compiled:
    """The instance and what is needed to read its solution as records and levels."""

    instance: Instance
    records: tuple[Record, ...]  # one per row
    levels: tuple[str, ...]  # one per column, highest fidelity first
    repairs: Mapping[str, tuple[Repair, ...]]
    derived: Mapping[str, Derived]
    scores: np.ndarray | None  # relevance scores per row, for the greedy ranking


def compile_records(
    records: Sequence[Record],
    fidelity: Sequence[str],
    budget: int,
    price: float,
    max_records: int | None,
    count_tokens,
    scores: Mapping[str, float] | None = None,
    retention: Mapping[str, float] | None = None,
    temperature: float = 0.05,
    ceilings: Mapping[str, str] | None = None,
) -> Compiled:
    """Build the instance; ``scores`` (relevance) supply utilities a record does not carry;
    ``ceilings`` (record id → level) withhold every level above a record's ceiling."""
    levels = tuple(fidelity)
    column = {name: j for j, name in enumerate(levels)}
    n, k = len(records), len(levels)
    tokens = np.zeros((n, k), dtype=np.int64)
    utility = np.zeros((n, k), dtype=np.float64)
    mask = np.zeros((n, k), dtype=bool)
    repairs: dict[str, tuple[Repair, ...]] = {}
    derived: dict[str, Derived] = {}
    best_score = max(scores.values(), default=0.0) if scores else 0.0
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
                score = scores[record.id]  # type: ignore[index]
                sharpened = math.exp((score - best_score) / temperature)
                derived[record.id] = Derived(score, best_score, temperature, sharpened)
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
            repairs[record.id] = tuple(reversed(fixed))

    instance = Instance(tokens, utility, mask, budget, price, max_records)
    row_scores = None
    if scores:
        row_scores = np.array([scores.get(r.id, 0.0) for r in records])
    return Compiled(instance, tuple(records), levels, repairs, derived, row_scores)
