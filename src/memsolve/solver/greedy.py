"""The greedy baseline: rank, take what fits, skip what does not, continue (never truncate)."""

from __future__ import annotations

import numpy as np

from . import native
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
    order = np.argsort(-np.asarray(scores, dtype=float), kind="stable")  # ties: input order
    module = native.module()
    if module is not None:  # the same walk in C
        choice = np.empty(instance.n, dtype=np.int64)
        limit = -1 if instance.max_records is None else instance.max_records
        module.greedy(instance.n, instance.k, order.astype(np.int64), np.ascontiguousarray(instance.tokens),
                      np.ascontiguousarray(scaled.usable).view(np.uint8), instance.budget, limit, choice)
        return make_solution(instance, scaled, choice, FEASIBLE, "greedy")
    # plain lists: the walk is sequential (each take shrinks what is left), so it runs in Python
    sizes = np.where(scaled.usable, instance.tokens, -1).tolist()  # -1: level not worth taking
    never = np.iinfo(np.int64).max
    lightest = np.where(scaled.usable, instance.tokens, never).min(axis=1, initial=never).tolist()
    left, taken, limit = instance.budget, 0, instance.max_records
    chosen = [-1] * instance.n
    for row in order.tolist():
        if limit is not None and taken >= limit:
            break
        if lightest[row] > left:
            continue
        for level, size in enumerate(sizes[row]):
            if 0 <= size <= left:
                chosen[row] = level
                left -= size
                taken += 1
                break
    choice = np.array(chosen, dtype=np.int64)
    return make_solution(instance, scaled, choice, FEASIBLE, "greedy")
