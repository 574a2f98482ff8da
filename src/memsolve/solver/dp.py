"""Exact dynamic program over integer capacity: the reference engine and the tie-breaker.

g_i(c[, m]) is the best scaled value of rows i..n-1 within c tokens (and m records), so
g is non-decreasing in c and g_0 is the value frontier at every budget 0..B.

Tie rule (documented in README, the one every exact result follows): among allocations with
the optimal scaled objective, take the one using the fewest tokens; among those, the one
whose levels, read in input order, are lexicographically highest fidelity (an earlier record
keeps more detail). The rows are processed last-to-first so that the reconstruction runs
first-to-last and can prefer each earlier row's highest feasible fidelity.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .instance import OPTIMAL, SKIPPED, Instance, Scaled, Solution, make_solution, scale

# Choice table cells (one byte each) the DP may allocate before it declines the instance.
MAX_CELLS = 200_000_000
_NEG = np.int64(-(2**62))


class Tables:
    """What the DP keeps: the best value at every capacity and each row's best level.

    ``frontier``: int64 (B+1,), the best scaled value within c tokens (count limit applied);
    ``choices``: int8 (n, B+1[, M+1]), the best level of row i at (c[, m]), -1 delete;
    ``count_limit``: M, when the count dimension is kept."""

    __slots__ = ("frontier", "choices", "count_limit")

    def __init__(self, frontier: np.ndarray, choices: np.ndarray, count_limit: int | None) -> None:
        self.frontier, self.choices, self.count_limit = frontier, choices, count_limit


class TooLarge(Exception):
    pass


def _binding_count(instance: Instance, scaled: Scaled) -> int | None:
    if instance.max_records is None:
        return None
    candidates = int(scaled.usable.any(axis=1).sum())
    return instance.max_records if instance.max_records < candidates else None


def tables(instance: Instance, scaled: Scaled) -> Tables:
    """Run the DP; raises TooLarge when the choice table would exceed MAX_CELLS."""
    n, budget = instance.n, instance.budget
    limit = _binding_count(instance, scaled)
    shape = (budget + 1,) if limit is None else (budget + 1, limit + 1)
    cells = n * int(np.prod(shape))
    if cells > MAX_CELLS:
        raise TooLarge(f"{cells:,} DP cells exceed the limit of {MAX_CELLS:,}")
    choices = np.full((n,) + shape, -1, dtype=np.int8)
    g = np.zeros(shape, dtype=np.int64)
    for row in range(n - 1, -1, -1):
        best = g.copy()
        arg = choices[row]
        # lowest fidelity first, `>=` below: on equal value the higher fidelity wins
        for level in range(instance.k - 1, -1, -1):
            if not scaled.usable[row, level]:
                continue
            size = int(instance.tokens[row, level])
            value = scaled.values[row, level]
            cand = np.full(shape, _NEG, dtype=np.int64)
            if limit is None:
                cand[size:] = g[: budget + 1 - size] + value
            else:
                cand[size:, 1:] = g[: budget + 1 - size, :-1] + value
            better = cand >= best
            np.copyto(best, cand, where=better)
            arg[better] = level
        g = best
    frontier = g if limit is None else g[:, limit]
    return Tables(frontier.copy(), choices, limit)


def reconstruct(instance: Instance, table: Tables, capacity: int) -> np.ndarray:
    """The tie-rule allocation within ``capacity`` tokens."""
    choice = np.full(instance.n, -1, dtype=np.int64)
    c, m = capacity, table.count_limit
    for row in range(instance.n):
        level = int(table.choices[row, c] if m is None else table.choices[row, c, m])
        choice[row] = level
        if level >= 0:
            c -= int(instance.tokens[row, level])
            if m is not None:
                m -= 1
    return choice


def solve_dp(instance: Instance, scaled: Scaled | None = None) -> Solution:
    """Exact optimum under the tie rule; status ``skipped`` when the instance is too large."""
    scaled = scaled or scale(instance)
    try:
        table = tables(instance, scaled)
    except TooLarge as exc:
        return make_solution(instance, scaled, np.full(instance.n, -1), SKIPPED, "dp", detail=str(exc))
    best = table.frontier[instance.budget]
    fewest = int(np.argmax(table.frontier == best))  # first capacity reaching the optimum
    solution = make_solution(instance, scaled, reconstruct(instance, table, fewest), OPTIMAL, "dp")
    return replace(solution, bound=solution.objective)


def frontier(instance: Instance, scaled: Scaled | None = None) -> list[tuple[int, float]]:
    """Breakpoints of the best objective over budgets 0..B: (0, v0) and each budget where it rises.

    The price per token stays the instance's (this round's λ_t / B) at every budget.
    """
    scaled = scaled or scale(instance)
    table = tables(instance, scaled)
    values = table.frontier
    points = [0] + [int(c) for c in np.flatnonzero(values[1:] > values[:-1]) + 1]
    out = []
    for capacity in points:
        solution = make_solution(instance, scaled, reconstruct(instance, table, capacity), OPTIMAL, "dp")
        out.append((capacity, solution.objective))
    return out
