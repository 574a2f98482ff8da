"""Exact reductions: shrink a multiple-choice knapsack to the small core that needs search.

(The numpy path. The compiled kernel, ``_kernel.c``, applies the same steps in exact integer
arithmetic when it is built and no count limit binds.)

Works on the scaled integer instance (values v_ij, sizes s_ij; delete is the point (0, 0)).
Every step keeps every optimal allocation, so the tie rule can still be applied on the core:

1. **Dominance.** Level a is dominated when another level b of the row has s_b ≤ s_a and
   v_b ≥ v_a (and is strictly better in one, or is the same point at a higher fidelity).
   Swapping a for b never loses value nor adds tokens, so a appears in no tie-rule optimum.
   No separate pass is needed: a dominated level is never a hull vertex (step 2), and the core
   DP's Pareto sets and tie-rule reconstruction never choose it.
2. **LP dominance.** The LP relaxation only ever uses levels on the upper convex hull of the
   row's (s, v) points with a supporting multiplier λ ≥ 0. Level j is such a hull vertex iff
   min over lighter levels a of slope(a, j) > max(0, max over heavier b of slope(j, b)).
   LP-dominated levels are left out of the LP only; they stay candidates for the integer core.
3. **LP relaxation.** Hull increments (Δs, Δv) have decreasing efficiency Δv/Δs within a row;
   the LP takes them in decreasing efficiency until the budget B is reached. The efficiency λ*
   of the split increment is the LP dual of the capacity row. It is found by a weighted
   selection (iterative pivoting on sampled efficiencies), linear time rather than a sort.
   The LP floor (every row at its last fully taken hull vertex) is a feasible integer
   allocation: the incumbent, value L.
4. **Bound fixing.** For any λ ≥ 0, U(λ) = λ·B + Σ_i max_j (v_ij − λ s_ij) bounds every
   allocation, and forcing row i to level j bounds it by U(λ) + rc_ij where
   rc_ij = (v_ij − λ s_ij) − max_j' (v_ij' − λ s_ij') ≤ 0. A level with U(λ*) + rc_ij < L
   can be in no allocation worth L or more, hence in no optimum: it is removed. A row left with
   a single level is fixed; the rest is the core, solved exactly on the remaining capacity.

A count limit M (``max_records``) enters the bound with its own multiplier μ (see
:func:`_count_multiplier`): U(λ, μ) = λB + μM + Σ_i max_j (v_ij − λ s_ij − μ·[j kept]). The
incumbent must respect the limit: the best of the greedy allocation, the Lagrangian one and
the LP floor cut to its M most valuable records, each filled into the room it leaves
(:func:`.core._fill`); the core then goes to the counted sparse DP (:func:`.core.pareto_dp_counted`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import native
from .instance import Instance, Scaled, scaled_value

_INF = np.inf


@dataclass(frozen=True)
class Reduction:
    """What the reductions decided, per row, and the numbers that justify it."""

    multiplier: float  # λ*, in scaled value per token
    upper_bound: float  # U(λ*), scaled
    incumbent: np.ndarray  # int64 (n,): the LP-floor (or greedy) allocation, -1 delete
    incumbent_value: int  # L, scaled
    keep: np.ndarray  # bool (n, k+1): levels still possible in an optimum; column k is delete
    core: np.ndarray  # int64: rows with more than one possible level, in input order
    fixed_choice: np.ndarray  # int64 (n,): the level of every fixed row (-1 delete); core rows -1
    hull_levels: int | None  # levels on the LP hull (all rows); None where the kernel did not count them
    lp_dominated: int | None  # usable levels off the hull
    count_price: float = 0.0  # μ, the bound's price per kept record under a count limit (scaled value)


def _columns(instance: Instance, scaled: Scaled) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(k+1, n) float columns of sizes and values and the usable mask; last column is delete."""
    n, k = instance.n, instance.k
    sizes = np.zeros((k + 1, n))
    values = np.zeros((k + 1, n))
    usable = np.ones((k + 1, n), dtype=bool)
    sizes[:k] = instance.tokens.T
    values[:k] = scaled.values.T
    usable[:k] = scaled.usable.T
    values[:k][~usable[:k]] = -_INF
    return sizes, values, usable


def _hull(sizes: np.ndarray, values: np.ndarray, usable: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per level: on the LP hull?, efficiency of the increment into it, and its predecessor."""
    levels, n = sizes.shape
    min_in = np.full((levels, n), _INF)  # min slope from a lighter level
    prev = np.full((levels, n), -1, dtype=np.int64)
    prev_size = np.full((levels, n), _INF)
    max_out = np.full((levels, n), -_INF)  # max slope to a heavier level
    beaten = np.zeros((levels, n), dtype=bool)  # same size, better (or equal at higher fidelity)
    with np.errstate(divide="ignore", invalid="ignore"):
        for a in range(levels):
            for b in range(a + 1, levels):
                both = usable[a] & usable[b]
                ds = sizes[b] - sizes[a]
                dv = values[b] - values[a]
                slope = dv / ds
                same = both & (ds == 0)
                # equal sizes: the larger value wins, equal values go to the higher fidelity,
                # which is the lower column index (delete, the last column, is lowest)
                beaten[b] |= same & (dv <= 0)
                beaten[a] |= same & (dv > 0)
                b_heavier = both & (ds > 0)
                a_heavier = both & (ds < 0)
                # b heavier: slope(a→b) is incoming for b and outgoing for a
                _update_in(min_in[b], prev[b], prev_size[b], slope, a, sizes[a], b_heavier)
                np.maximum(max_out[a], np.where(b_heavier, slope, -_INF), out=max_out[a])
                _update_in(min_in[a], prev[a], prev_size[a], slope, b, sizes[b], a_heavier)
                np.maximum(max_out[b], np.where(a_heavier, slope, -_INF), out=max_out[b])
    on_hull = usable & ~beaten & (min_in > np.maximum(max_out, 0.0))
    return on_hull, min_in, prev


def _update_in(
    min_in: np.ndarray, prev: np.ndarray, prev_size: np.ndarray, slope: np.ndarray, source: int,
    source_size: np.ndarray, where: np.ndarray,
) -> None:
    # among equal slopes keep the lightest source: that is the previous hull vertex
    better = where & ((slope < min_in) | ((slope == min_in) & (source_size < prev_size)))
    np.copyto(min_in, slope, where=better)
    np.copyto(prev_size, source_size, where=better)
    prev[better] = source


def split_efficiency(eff: np.ndarray, weight: np.ndarray, capacity: float) -> float:
    """λ*: the efficiency at which increments taken in decreasing efficiency fill ``capacity``.

    Iterative weighted selection: each pass picks a pivot from a sample, keeps the side that
    holds the split, and carries the weight of everything above it. Expected linear time.
    """
    taken = 0.0
    rng = np.random.default_rng(12345)  # fixed: same pivots, same work, every run
    while eff.size > 256:
        sample = eff[rng.integers(0, eff.size, 128)]
        sample_weight = weight[rng.integers(0, eff.size, 128)]
        # guess the split's rank from the sample's share of the remaining capacity
        order = np.argsort(-sample)
        share = np.cumsum(sample_weight[order]) * (weight.sum() / max(sample_weight.sum(), 1e-300))
        position = int(np.searchsorted(share, capacity - taken))
        lo = sample[order[min(position + 4, 127)]]
        hi = sample[order[max(position - 4, 0)]]
        above = eff > hi
        w_above = float(weight[above].sum())
        if taken + w_above > capacity:  # the split is above hi
            eff, weight = eff[above], weight[above]
            continue
        within = ~above & (eff >= lo)
        w_within = float(weight[within].sum())
        if taken + w_above + w_within > capacity:  # the split is in [lo, hi]
            taken += w_above
            eff, weight = eff[within], weight[within]
            if eff.size == within.size:  # no progress (all equal): finish by sorting
                break
            continue
        taken += w_above + w_within  # the split is below lo
        below = eff < lo
        eff, weight = eff[below], weight[below]
    order = np.argsort(-eff, kind="stable")
    cumulative = taken + np.cumsum(weight[order])
    split = int(np.searchsorted(cumulative, capacity, side="right"))
    if split >= eff.size:
        return 0.0
    return float(eff[order[split]])


class Relaxation:
    """The LP relaxation at its optimal multiplier λ*, on (k+1, n) columns (last: delete).

    ``upper_bound``: U(λ*, μ); ``reduced``: (k+1, n), v − λ*·s (− μ where kept), -inf where not
    usable; ``row_best``: (n,); ``floor``: int64 (n,), the LP-floor level per row, -1 delete (a
    feasible allocation); ``usable``: bool (k+1, n); ``count_price``: μ (0 without a count limit)."""

    __slots__ = ("multiplier", "upper_bound", "reduced", "row_best", "floor", "usable", "hull_levels",
                 "lp_dominated", "count_price")

    def __init__(self, multiplier: float, upper_bound: float, reduced: np.ndarray, row_best: np.ndarray,
                 floor: np.ndarray, usable: np.ndarray, hull_levels: int, lp_dominated: int,
                 count_price: float = 0.0) -> None:
        self.multiplier, self.upper_bound, self.reduced, self.row_best = multiplier, upper_bound, reduced, row_best
        self.floor, self.usable, self.hull_levels, self.lp_dominated = floor, usable, hull_levels, lp_dominated
        self.count_price = count_price


def relax(instance: Instance, scaled: Scaled) -> Relaxation:
    """Hull, LP split multiplier λ*, Lagrangian bound U(λ*) and the LP-floor allocation."""
    n, k = instance.n, instance.k
    sizes, values, usable = _columns(instance, scaled)
    on_hull, eff, prev = _hull(sizes, values, usable)
    budget = float(instance.budget)

    # hull increments: into every hull vertex heavier than the row's base point
    increment = on_hull & (prev >= 0)
    dw = sizes - np.take_along_axis(sizes, np.where(prev >= 0, prev, 0), axis=0)
    total = float(dw[increment].sum())
    lam = 0.0 if total <= budget else split_efficiency(eff[increment], dw[increment], budget)

    # LP floor: each row at its heaviest hull vertex whose increment is strictly above λ*
    floor_level = np.full(n, k, dtype=np.int64)
    floor_size = np.full(n, -1.0)
    for j in range(k + 1):
        take = on_hull[j] & ((prev[j] < 0) | (eff[j] > lam)) & (sizes[j] > floor_size)
        floor_level[take] = j
        floor_size[take] = sizes[j][take]

    if instance.max_records is not None:
        lam = _best_count_lambda(values, sizes, budget, instance.max_records, lam, eff[increment])
    reduced = values - lam * sizes
    mu = _count_multiplier(reduced, instance.max_records)
    reduced[:k] -= mu  # every kept record pays μ for its place under the count limit
    row_best = reduced.max(axis=0)
    count = 0 if instance.max_records is None else instance.max_records
    return Relaxation(
        multiplier=lam,
        upper_bound=lam * budget + mu * count + float(row_best.sum()),
        reduced=reduced,
        row_best=row_best,
        floor=np.where(floor_level == k, -1, floor_level),
        usable=usable,
        hull_levels=int(on_hull[:k].sum()),
        lp_dominated=int((usable[:k] & ~on_hull[:k]).sum()),
        count_price=mu,
    )


def _dual(values: np.ndarray, sizes: np.ndarray, budget: float, limit: int, lam: float) -> float:
    module = native.module()
    if module is not None:  # the same function in one pass (the search calls it ~30 times)
        levels, n = values.shape
        return module.dual(levels, n, values, sizes, budget, lam, limit, np.empty(n))[0]
    reduced = values - lam * sizes
    mu = _count_multiplier(reduced, limit)
    reduced[:-1] -= mu
    return lam * budget + mu * limit + float(reduced.max(axis=0).sum())


def _best_count_lambda(values: np.ndarray, sizes: np.ndarray, budget: float, limit: int, top: float,
                       efficiencies: np.ndarray) -> float:
    """The λ in [0, λ_capacity] that minimizes U(λ, μ(λ)) when a count limit applies.

    The dual function is convex in λ once μ is chosen optimally, so a golden-section search
    finds its minimum; when the count limit binds and the budget does not, that is λ = 0. The
    search only comes close to a minimum at a kink, so the hull increments' efficiencies nearest
    its interval are tried too (a heuristic: the function also bends where rows' gains cross, as μ
    follows them; any λ >= 0 gives a valid bound, and the least is kept). On the degenerate
    correlated classes every increment past the first has one efficiency, the minimum is that kink,
    and there the levels tie exactly, as tied.py needs.
    """
    if top <= 0:
        return 0.0
    lo, hi = 0.0, top
    ratio = (5**0.5 - 1) / 2
    a, b = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
    fa, fb = _dual(values, sizes, budget, limit, a), _dual(values, sizes, budget, limit, b)
    for _ in range(28):  # the interval shrinks to 1.4e-6 of λ_capacity: any λ gives a valid bound
        if fa <= fb:
            hi, b, fb = b, a, fa
            a = hi - ratio * (hi - lo)
            fa = _dual(values, sizes, budget, limit, a)
        else:
            lo, a, fa = a, b, fb
            b = lo + ratio * (hi - lo)
            fb = _dual(values, sizes, budget, limit, b)
    middle = (lo + hi) / 2
    inside = efficiencies[(efficiencies >= 0) & (efficiencies <= top)]
    below, above = inside[inside <= middle], inside[inside >= middle]
    kinks = ([float(below.max())] if below.size else []) + ([float(above.min())] if above.size else [])
    candidates = kinks + [middle, 0.0, top]
    return min(candidates, key=lambda x: _dual(values, sizes, budget, limit, x))


def _count_multiplier(reduced: np.ndarray, limit: int | None) -> float:
    """μ for the count limit M: the (M+1)-th largest best value a record can add at λ*.

    With it at most M records still gain from being kept, and U(λ, μ) = λB + μM + Σ_i max(0,
    max_j (v_ij − λ s_ij − μ)) is a valid bound (a Lagrangian relaxation of both constraints)
    that is much tighter than ignoring the limit when the limit binds.
    """
    if limit is None:
        return 0.0
    gains = reduced[:-1].max(axis=0)  # best non-delete level of each row
    gains = gains[gains > 0]
    if gains.size <= limit:
        return 0.0
    return float(np.partition(gains, gains.size - limit - 1)[gains.size - limit - 1])


def fix(relaxation: Relaxation, scaled: Scaled, incumbent: np.ndarray) -> Reduction:
    """Remove every level whose bound U(λ*) + rc falls below the incumbent's value."""
    lp = relaxation
    k = lp.reduced.shape[0] - 1
    n = lp.reduced.shape[1]
    value = scaled_value(scaled, incumbent)
    tolerance = 1e-9 * (abs(lp.upper_bound) + float(np.abs(lp.row_best).sum())) + 1.0
    keep = lp.usable & (lp.upper_bound + (lp.reduced - lp.row_best) >= value - tolerance)
    keep[np.where(incumbent >= 0, incumbent, k), np.arange(n)] = True  # never lose the incumbent to rounding
    keep_t = np.ascontiguousarray(keep.T)
    in_core = keep_t.sum(axis=1) > 1
    fixed_choice = np.where(in_core, k, np.argmax(keep_t, axis=1))
    return Reduction(
        multiplier=lp.multiplier,
        upper_bound=lp.upper_bound,
        incumbent=np.asarray(incumbent, dtype=np.int64),
        incumbent_value=value,
        keep=keep_t,
        core=np.flatnonzero(in_core),
        fixed_choice=np.where(fixed_choice == k, -1, fixed_choice).astype(np.int64),
        hull_levels=lp.hull_levels,
        lp_dominated=lp.lp_dominated,
        count_price=lp.count_price,
    )


def closest_rows(relaxation: Relaxation, count: int) -> np.ndarray:
    """The rows whose second-best level is nearest their best at λ*: where the optimum may differ."""
    reduced = np.where(relaxation.usable, relaxation.reduced, -np.inf)
    n = reduced.shape[1]
    if n <= count:
        return np.arange(n)
    second = np.partition(reduced, -2, axis=0)[-2]
    gap = relaxation.row_best - second
    return np.sort(np.argpartition(gap, count)[:count])
