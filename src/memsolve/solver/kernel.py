"""The compiled kernel's exact solve, tie rule included, in C; a count limit by a price per record.

When the kernel is not built or switched off (:mod:`.native`), the numpy reductions of
:mod:`.reduce` and the core solvers of :mod:`.core` give the same tie-rule allocations, slower
(the same value everywhere; a count-limited core within the compiled counted DP's larger state
limits but past the numpy one's goes to CP-SAT there: fewest tokens, then the search's order).
The C file's header states the algorithm; it works in exact integer arithmetic (bounds scaled by the LP
multiplier's denominator, in 128 bits), so no comparison needs a tolerance.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import SolverError
from . import native
from .instance import Instance, Scaled

# Bounds are products of a capacity-sized denominator and 2**52-sized values, summed over up
# to a million rows: the kernel takes capacities below 2**40 so that they stay inside 128 bits.
MAX_CAPACITY = 2**40
MAX_LEVELS = 62
MAX_PRICES = 20  # kernel solves a count limit may take before the numpy path answers
MAX_STALLS = 6  # ... and solves in a row that leave the count where it was
# ... and states their searches for the optimum may generate in all: a price near the breakpoint can
# make the priced instance as hard as subset-sum (noisy correlated utilities, 1,000-10,000 records, few
# kept: 1.4 and 14.9 million states in one solve before the kernel's own limit, 0.2-0.5 s in all); where
# prices answer, 0.05-0.5 million in all on memory-shaped records, 4-7.5 million on near-ties (random
# noisy shapes of noise 0.3, where the counted DP's states overflow: 0.24-0.33 s, not CP-SAT's 5 s)
PRICE_STATES = 8_000_000
# Past this many rows a dozen kernel solves cost more than the numpy path's reductions (measured:
# memory-shaped 30,000 rows, M = 1,500: 50 ms priced, 900 ms numpy; 100,000 rows: a tie)
PRICED_MAX_ROWS = 30_000


@dataclass(frozen=True)
class KernelResult:
    """What the kernel decided: the allocation and the reduction that justifies it."""

    choice: np.ndarray  # int64 (n,): level per row, -1 delete
    keep: np.ndarray  # bool (n, k+1): levels that can be in an optimum (column k: delete)
    core: np.ndarray  # int64: rows left with more than one such level, in input order
    multiplier: float  # λ* = p / q, scaled value per token
    upper_bound: float  # U(λ*), scaled
    value: int  # V*, scaled
    tokens: int  # W*: the fewest tokens of an allocation worth V*
    hull_levels: int | None  # None: not counted (the band spared rows their hull, _kernel.c: banded_split;
    # or the budget bound no row and a sample said so before the hulls: fits_likely; hull_rows is then 0)
    lp_dominated: int | None
    searched_rows: int  # rows the optimum search enumerated
    tie_rule: bool  # False: too many tied optima to order by fidelity; this is one of them
    states: int  # search states generated (a deterministic measure of the search's work)
    search_states: int  # of which the optimum search (phase 1)
    tail_rows: int  # rows the tie rule's DP enumerated (the others are at their highest kept level)
    hull_rows: int  # rows given a convex hull (every row but where the band spared some: _kernel.c; which
    # rows depends on the CPU, the band's grid being drawn only with AVX-512; the answer does not)


def applies(instance: Instance) -> bool:
    """The kernel takes instances within its number range. A count limit is met by a price per
    kept record (:func:`solve_kernel_counted`), or the numpy path answers."""
    return native.enabled() and instance.budget < MAX_CAPACITY and instance.k <= MAX_LEVELS


def solve_kernel(
    instance: Instance, scaled: Scaled, *, bounded_ties: bool = True, pareto_tail: bool = False,
    tighten_at_once: bool = False, shortcut: bool = True, state_limit: int = 0,
) -> KernelResult | None:
    """The tie-rule optimum by the kernel, or None past its state limit (CP-SAT takes over).

    ``bounded_ties``: when millions of optima tie, run the tie-rule DP to the end if its table
    bounds it (up to 6·10**7 states); False when the caller orders such ties more cheaply (the
    dense DP, for small tables). ``pareto_tail``: the tie rule's tail by Pareto layers even where
    every kept level ties at the multiplier (where the kernel otherwise takes a bitset of token
    sums): for tests, which hold the two to the same allocation. ``tighten_at_once``: the search's
    tighter bounds (one-move, the LP of the rows outside, the values' gcd), which it takes once it
    has generated 65,536 states, from the first state, and the count cut (tried where the search
    passes its state limit) on the first incumbent: for tests, on instances exhaustive search
    reaches. ``shortcut``: where the budget binds no record (each at its most valuable level fits), that
    allocation without search, as ``solve_job`` and ``solve_arrays`` take it (before the hulls where a
    sample of records says so: the result's hull counts are then None); False for tests that compare
    the hulls. ``state_limit``: states the optimum's search may generate before the solve gives up
    (None), where below the kernel's own limit; 0: that limit (the tie rule keeps its own).
    """
    kernel = native.module()
    assert kernel is not None
    n, k = instance.n, instance.k
    tokens = np.ascontiguousarray(instance.tokens, dtype=np.int64)
    values = np.ascontiguousarray(scaled.values, dtype=np.int64)
    usable = np.ascontiguousarray(scaled.usable).view(np.uint8)
    choice = np.empty(n, dtype=np.int64)
    keep = np.empty((n, k + 1), dtype=np.uint8)
    core = np.empty(n, dtype=np.int64)
    try:
        mode = 2 if pareto_tail else int(bounded_ties)
        info = kernel.solve(n, k, tokens, values, usable, int(instance.budget), choice, keep, core, mode,
                            tighten_at_once, -1, shortcut, state_limit)
    except RuntimeError as exc:  # an internal inconsistency: a bug, reported as a solver error
        raise SolverError(str(exc)) from None
    return None if info is None else _result(info, choice, keep, core)


def _result(info: tuple, choice: np.ndarray, keep: np.ndarray, core: np.ndarray) -> KernelResult:
    p, q, upper, value, used, hull, dominated, searched, core_rows, tie_rule, states, tie_states, tail, hull_rows = info
    return KernelResult(
        choice=choice,
        keep=keep.view(bool),
        core=core[: int(core_rows)],
        multiplier=p / q,
        upper_bound=upper,
        value=int(value),
        tokens=int(used),
        hull_levels=None if hull < 0 else int(hull),
        lp_dominated=None if dominated < 0 else int(dominated),
        searched_rows=int(searched),
        tie_rule=bool(tie_rule),
        states=int(states) + int(tie_states),
        search_states=int(states),
        tail_rows=int(tail),
        hull_rows=int(hull_rows),
    )


@dataclass(frozen=True)
class Evaluated:
    """An allocation's worth as :func:`.instance.make_solution` computes it (the same floats)."""

    objective: float
    utility: float
    tokens: int
    scaled_value: int


def one_call_applies(instance: Instance) -> bool:
    """:func:`solve_job` takes the instance: the kernel applies, the arrays are in its layout (no
    copies), and the compiled summation is numpy's on this install."""
    return (
        applies(instance)
        and instance.tokens.dtype == np.int64
        and instance.utility.dtype == np.float64
        and instance.mask.dtype == np.bool_
        and instance.tokens.flags.c_contiguous
        and instance.utility.flags.c_contiguous
        and instance.mask.flags.c_contiguous
        and native.sums_like_numpy()
    )


def solve_job(instance: Instance, *, bounded_ties: bool = True) -> tuple[Scaled, KernelResult | None, Evaluated | None]:
    """The scaling of :func:`.instance.scale` (the same integers and factor), the kernel's solve
    and the allocation's worth, in one call of the compiled kernel (the engine's Job). The result
    is None past the kernel's state limit; the caller checks :func:`one_call_applies` first."""
    kernel = native.module()
    assert kernel is not None
    n, k = instance.n, instance.k
    values = np.empty((n, k), dtype=np.int64)
    usable = np.empty((n, k), dtype=np.uint8)
    choice = np.empty(n, dtype=np.int64)
    keep = np.empty((n, k + 1), dtype=np.uint8)
    core = np.empty(n, dtype=np.int64)
    try:
        factor, info, objective, utility, used, worth, _ = kernel.solve_job(
            n, k, instance.tokens, instance.utility, instance.mask.view(np.uint8), int(instance.budget),
            float(instance.price), int(bounded_ties), values, usable, choice, keep, core)
    except RuntimeError as exc:
        raise SolverError(str(exc)) from None
    scaled = Scaled(values, usable.view(bool), factor)
    if info is None:
        return scaled, None, None
    return scaled, _result(info, choice, keep, core), Evaluated(objective, utility, int(used), int(worth))


def solve_kernel_counted(
    instance: Instance, scaled: Scaled, *, bounded_ties: bool = True, free: KernelResult | None = None
) -> tuple[KernelResult, int] | None:
    """The tie-rule optimum under the count limit M and the price μ per kept record that gives
    it, or None (the numpy path answers).

    Lagrangian: with every kept record paying μ > 0, an optimum x of the priced instance that
    keeps exactly M records is an optimum of the limited one (for any y within the limit,
    v(y) <= v(y) - μ(|y| - M) <= v(x)), and every limited optimum is a priced optimum that keeps
    M. The kernel's tie-rule pick among all priced optima is then, being one of those, the
    tie-rule pick among the limited optima too, provided no level is worth exactly μ (the
    priced instance drops it, a limited optimum may keep it). μ is found by bisection over
    integers from the LP's estimate (a secant on the count once bracketed); where the count jumps
    past M (a duality gap) there is none. ``free``: the unlimited solve, when the caller has it.
    """
    limit = instance.max_records
    if free is None:
        free = solve_kernel(instance, scaled, bounded_ties=bounded_ties)
    if free is None or limit is None or _kept(free) <= limit:
        return None if free is None else (free, 0)
    if instance.n > PRICED_MAX_ROWS:
        return None
    values, usable = scaled.values, scaled.usable

    def priced(mu: int, spent: int) -> KernelResult | None:
        return solve_kernel(instance, Scaled(values - mu, usable & (values > mu), scaled.scale),
                            bounded_ties=bounded_ties, state_limit=max(PRICE_STATES - spent, 1))

    lo, hi = 0, int(values[usable].max()) if usable.any() else 1  # priced at hi, no level is worth keeping
    kept_lo, kept_hi, stalled, spent = _kept(free), 0, 0, 0
    mu = min(max(_estimate(instance, scaled, free.multiplier, limit), lo + 1), hi - 1)
    step = max(mu // 64, 1)
    # past a relative precision of 1e-7 the price is at the breakpoint itself: a duality gap
    for _ in range(MAX_PRICES):
        if hi - lo <= max(1, hi // 10**7):
            break
        found = priced(mu, spent)
        if found is None:
            return None
        spent += found.search_states
        kept = _kept(found)
        # once bracketed, a count that no longer moves means the bracket closes on a jump past M
        stalled = stalled + 1 if step == 0 and kept in (kept_lo, kept_hi) else 0
        if stalled > MAX_STALLS:
            return None
        if kept == limit:
            if bool((usable & (values == mu)).any()):
                return None
            return found, mu
        if spent > PRICE_STATES:
            return None
        if kept > limit:
            lo, kept_lo = mu, kept
        else:
            hi, kept_hi = mu, kept
        if step and (lo == mu and mu + step < hi or hi == mu and mu - step > lo):
            # gallop from the estimate while it brackets nothing
            mu = mu + step if lo == mu else mu - step
            step *= 2
        else:
            # then the secant of the count, kept inside the middle of the bracket
            step = 0
            # (bisection while the count stalls: the secant cannot see a narrow step at M)
            guess = lo + (hi - lo) * (kept_lo - limit) // max(kept_lo - kept_hi, 1)
            margin = (hi - lo) // (2 if stalled else 8)
            mu = min(max(guess, lo + max(margin, 1)), hi - max(margin, 1))
    return None


def _kept(result: KernelResult) -> int:
    return int((result.choice >= 0).sum())


def _estimate(instance: Instance, scaled: Scaled, multiplier: float, limit: int) -> int:
    """μ at the unlimited LP multiplier: the (M+1)-th largest value a record adds at its best level."""
    gains = np.where(scaled.usable, scaled.values - multiplier * instance.tokens, -np.inf).max(axis=1, initial=-np.inf)
    gains = gains[gains > 0]
    if gains.size <= limit:
        return 1
    return int(np.partition(gains, gains.size - limit - 1)[gains.size - limit - 1])
