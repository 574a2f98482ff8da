"""The greedy baseline: rank, take what fits, skip what does not, continue (never truncate)."""

from __future__ import annotations

import numpy as np

from .instance import FEASIBLE, Instance, Scaled, Solution, make_solution, scale


def solve_greedy(
    instance: Instance, scaled: Scaled | None = None, *, scores: np.ndarray | None = None
) -> Solution:
    """Visit rows by ``scores`` (default: best net value) descending, ties in input order; give
    each the highest-fidelity worthwhile level that still fits the budget and count limit."""
    scaled = scaled or scale(instance)
    if scores is None:
        net = np.where(scaled.usable, instance.net(), -np.inf)
        scores = net.max(axis=1) if instance.k else np.zeros(instance.n)
    order = sorted(range(instance.n), key=lambda row: (-float(scores[row]), row))
    left, taken = instance.budget, 0
    choice = np.full(instance.n, -1, dtype=np.int64)
    for row in order:
        if instance.max_records is not None and taken >= instance.max_records:
            break
        for level in np.flatnonzero(scaled.usable[row]).tolist():
            size = int(instance.tokens[row, level])
            if size <= left:
                choice[row] = level
                left -= size
                taken += 1
                break
    return make_solution(instance, scaled, choice, FEASIBLE, "greedy")
