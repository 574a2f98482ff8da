"""Exact solves of the core left by :mod:`.reduce`, under the same tie rule as the dense DP.

The core is solved by a sparse DP over Pareto sets of (tokens, value) states, rows processed
last to first, each state pruned when even the Lagrangian bound of the rows still to come cannot
reach the incumbent. Reconstruction runs first to last and gives each row the highest fidelity
that still completes an optimal allocation, as the dense DP does. A binding count limit adds the
count to the state (a Pareto set per count) and its price μ to the bound; a core too large for
the sparse DP goes to the dense DP (its table includes the count) when small enough, else to
CP-SAT.

When the compiled kernel is built (:mod:`.kernel`), the engines use :func:`solve_kernel_reduced`
instead: the same reductions and tie rule in C, with an expanding core. A binding count limit is
met there either by a price per kept record in the kernel or by this module's counted DP on the
(λ, μ) reduction (in C as the kernel's ``counted_dp`` when built), whichever :func:`_prices_first`
puts first, or, on the degenerate correlated classes whose every level is worth its price, by
:mod:`.tied`; this module's numpy path remains the fallback (no kernel, its state limit, or a count
limit no way meets).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..errors import SolverError
from . import native
from .cpsat import solve_cpsat
from .dp import solve_dp as dense_dp
from .instance import OPTIMAL, SKIPPED, TIME_LIMIT, Instance, Scaled, Solution, make_solution, scaled_value
from .kernel import MAX_LEVELS, PRICED_MAX_ROWS, Evaluated, KernelResult, solve_kernel, solve_kernel_counted
from .reduce import Reduction, Relaxation, closest_rows, fix, relax
from .tied import tied_counted

# The sparse DP declines a core (CP-SAT takes it, under its time limit) past these sizes.
MAX_STATES = 1_000_000  # Pareto states after one row
MAX_WORK = 4_000_000  # candidate states over all rows
# ... and the compiled counted DP past KERNEL_FACTOR times these (16 bytes a state kept: at most ~256 MiB;
# weakly correlated, 1,000 records, 60 % of the unlimited optimum's kept: 274 rows at a whole unit below
# the bound in 55 ms, past 1,000,000 states a row at 1x, CP-SAT then 0.7 s)
KERNEL_FACTOR = 4


class CoreTooLarge(Exception):
    pass


class IncumbentOptimal(CoreTooLarge):
    """The counted DP overflowed at the incumbent's floor, but no allocation is worth one step of the
    values' grid more: the incumbent's value is the optimum (which optimum the tie rule takes is open)."""


def sub_instance(instance: Instance, scaled: Scaled, red: Reduction) -> tuple[Instance, Scaled]:
    """The core as an instance of its own: core rows, surviving levels, remaining capacity."""
    rows = red.core
    fixed = red.fixed_choice
    chosen = np.flatnonzero(fixed >= 0)
    used = int(instance.tokens[chosen, fixed[chosen]].sum())
    limit = None if instance.max_records is None else instance.max_records - len(chosen)
    keep = red.keep[rows, : instance.k]
    sub = Instance(
        instance.tokens[rows], instance.utility[rows], instance.mask[rows] & keep,
        instance.budget - used, instance.price, limit,
    )
    fits = sub.tokens <= sub.budget  # the core's capacity is smaller than the budget
    return sub, Scaled(scaled.values[rows], scaled.usable[rows] & keep & fits, scaled.scale)


def pareto_dp(sub: Instance, scaled: Scaled, delete_ok: np.ndarray, multiplier: float, floor: int) -> np.ndarray:
    """Tie-rule optimum of a core without count limit; raises CoreTooLarge past MAX_STATES."""
    n = sub.n
    capacity = sub.budget
    reduced_best = np.zeros(n + 1)  # Σ over rows < i of each row's best Lagrangian value
    reduced_best[1:] = np.cumsum(_row_bests(sub, scaled, delete_ok, multiplier, 0.0))
    slack = 1e-9 * (abs(float(reduced_best[-1])) + multiplier * capacity) + 1.0

    states: list[tuple[np.ndarray, np.ndarray]] = [None] * (n + 1)  # type: ignore[list-item]
    w = np.zeros(1, dtype=np.int64)
    v = np.zeros(1, dtype=np.int64)
    states[n] = (w, v)
    work = 0
    for row in range(n - 1, -1, -1):
        levels = np.flatnonzero(scaled.usable[row]).tolist()
        parts_w = [w + int(sub.tokens[row, j]) for j in levels]
        parts_v = [v + int(scaled.values[row, j]) for j in levels]
        if delete_ok[row]:
            parts_w.append(w)
            parts_v.append(v)
        cw = np.concatenate(parts_w)
        cv = np.concatenate(parts_v)
        work += cw.size
        if work > MAX_WORK:
            raise CoreTooLarge(f"more than {MAX_WORK:,} candidate states")
        bound = cv + multiplier * (capacity - cw) + reduced_best[row]
        ok = (cw <= capacity) & (bound >= floor - slack)
        cw, cv = cw[ok], cv[ok]
        order = np.lexsort((-cv, cw))
        cw, cv = cw[order], cv[order]
        running = np.maximum.accumulate(cv)
        frontier = np.ones(cw.size, dtype=bool)
        frontier[1:] = cv[1:] > running[:-1]
        w, v = cw[frontier], cv[frontier]
        if w.size > MAX_STATES:
            raise CoreTooLarge(f"{w.size:,} Pareto states")
        states[row] = (w, v)

    choice = np.full(n, -1, dtype=np.int64)
    w0, v0 = states[0]
    top = int(np.argmax(v0))  # Pareto order: the first state with the best value has fewest tokens
    target_w, target_v = int(w0[top]), int(v0[top])
    for row in range(n):
        nw, nv = states[row + 1]
        options = np.flatnonzero(scaled.usable[row]).tolist() + ([-1] if delete_ok[row] else [])
        for j in options:  # highest fidelity first, delete last
            dw = int(sub.tokens[row, j]) if j >= 0 else 0
            dv = int(scaled.values[row, j]) if j >= 0 else 0
            at = int(np.searchsorted(nw, target_w - dw))
            if at < nw.size and nw[at] == target_w - dw and nv[at] == target_v - dv:
                choice[row] = j
                target_w, target_v = target_w - dw, target_v - dv
                break
        else:  # pragma: no cover - the states always contain the optimum's suffixes
            raise AssertionError("core reconstruction lost the optimum")
    return choice


def _row_bests(
    sub: Instance, scaled: Scaled, delete_ok: np.ndarray, multiplier: float, count_price: float
) -> np.ndarray:
    """Each row's best Lagrangian value at λ per token and μ per kept record (0 for delete, where
    allowed; -inf where no option is)."""
    best = np.where(scaled.usable, scaled.values - multiplier * sub.tokens - count_price, -np.inf)
    best = best.max(axis=1, initial=-np.inf)
    return np.where(delete_ok, np.maximum(best, 0.0), best)


def _dense_rank(values: np.ndarray) -> np.ndarray:
    """Each value's rank among the distinct values (equal values, equal ranks): np.unique's inverse,
    by one argsort whose order among equals does not matter (2-4x faster than np.unique's)."""
    order = np.argsort(values)
    ranked = np.empty(values.size, dtype=np.int64)
    if values.size:
        ranked[order] = np.concatenate(([0], np.cumsum(values[order][1:] != values[order][:-1])))
    return ranked


def pareto_dp_counted(
    sub: Instance, scaled: Scaled, delete_ok: np.ndarray, multiplier: float, count_price: float, floor: int
) -> np.ndarray | None:
    """Tie-rule optimum of a core that keeps at most ``sub.max_records`` rows (the dense DP's rule:
    most value, then fewest tokens, then each row's highest fidelity in input order); raises
    CoreTooLarge past MAX_STATES or MAX_WORK (KERNEL_FACTOR times those in C); None when no
    allocation's bound reaches ``floor``. The compiled kernel's ``counted_dp`` when it is built (the
    same allocation, 5-20x faster), else :func:`pareto_dp_counted_numpy`."""
    module = native.module()
    if module is None or sub.k > MAX_LEVELS:
        return pareto_dp_counted_numpy(sub, scaled, delete_ok, multiplier, count_price, floor)
    assert sub.max_records is not None
    choice = np.full(sub.n, -1, dtype=np.int64)
    found = module.counted_dp(
        sub.n, sub.k, np.ascontiguousarray(sub.tokens, dtype=np.int64),
        np.ascontiguousarray(scaled.values, dtype=np.int64), np.ascontiguousarray(scaled.usable, dtype=np.bool_),
        np.ascontiguousarray(delete_ok, dtype=np.bool_), sub.budget, sub.max_records, float(multiplier),
        float(count_price), int(floor), KERNEL_FACTOR * MAX_STATES, KERNEL_FACTOR * MAX_WORK, choice,
    )
    if found == 1:
        raise CoreTooLarge(f"more than {KERNEL_FACTOR * MAX_STATES:,} states after a row or "
                           f"{KERNEL_FACTOR * MAX_WORK:,} in all")
    if found == 3:  # pragma: no cover - the states always contain the optimum's suffixes
        raise AssertionError("core reconstruction lost the optimum")
    return None if found == 2 else choice


def pareto_dp_counted_numpy(
    sub: Instance, scaled: Scaled, delete_ok: np.ndarray, multiplier: float, count_price: float, floor: int
) -> np.ndarray | None:
    """:func:`pareto_dp_counted` in numpy.

    The states of rows i..n-1 are (tokens, count, value): for each count, the Pareto set in
    (tokens, value), less the states that one with fewer records beats. A state is pruned when the
    Lagrangian bound with λ per token and μ per kept record, v + λ(capacity − w) + μ(limit − c) +
    Σ_{rows < i} max_j (v_ij − λ s_ij − μ), falls below ``floor`` (any λ, μ ≥ 0 give a valid bound).
    No optimum is lost: a state beating its suffix with as many records or fewer would make a better
    or lighter allocation, so at most one with the same tokens and value and fewer records replaces
    it, and the reconstruction asks for the fewest records of each (tokens, value).
    """
    n, capacity, limit = sub.n, sub.budget, sub.max_records
    assert limit is not None
    reduced_best = np.zeros(n + 1)
    reduced_best[1:] = np.cumsum(_row_bests(sub, scaled, delete_ok, multiplier, count_price))
    slack = 1e-9 * (abs(float(reduced_best[-1])) + multiplier * capacity + count_price * limit) + 1.0

    span = capacity + 1  # (count, tokens) as one int64 key where it fits
    across = (limit + 1) * span < 2**62
    states: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = [None] * (n + 1)  # type: ignore[list-item]
    w = np.zeros(1, dtype=np.int64)
    c = np.zeros(1, dtype=np.int64)
    v = np.zeros(1, dtype=np.int64)
    states[n] = (w, c, v)
    work = 0
    for row in range(n - 1, -1, -1):
        levels = np.flatnonzero(scaled.usable[row]).tolist()
        parts = [(w + int(sub.tokens[row, j]), c + 1, v + int(scaled.values[row, j])) for j in levels]
        if delete_ok[row]:
            parts.append((w, c, v))
        cw, cc, cv = (np.concatenate(column) for column in zip(*parts, strict=True))
        work += cw.size
        if work > MAX_WORK:
            raise CoreTooLarge(f"more than {MAX_WORK:,} candidate states")
        bound = cv + multiplier * (capacity - cw) + count_price * (limit - cc) + reduced_best[row]
        ok = (cw <= capacity) & (cc <= limit) & (bound >= floor - slack)
        cw, cc, cv = cw[ok], cc[ok], cv[ok]
        # per count, tokens ascending and value descending: a state stays when it is worth more
        # than every lighter (or as light) state of its count. The value's rank, offset by the
        # count, makes one running maximum serve every count at once.
        order = np.lexsort((-cv, cw, cc))
        cw, cc, cv = cw[order], cc[order], cv[order]
        rank = _dense_rank(cv)
        key = cc * (cv.size + 1) + rank
        front = np.ones(cv.size, dtype=bool)
        front[1:] = key[1:] > np.maximum.accumulate(key)[:-1]
        w, c, v = cw[front], cc[front], cv[front]
        if across:
            # a state is beaten, too, by one with fewer records that is as light and as valuable: the
            # last state at or below (c - 1, w) in (count, tokens) order, one search for all
            place = c * span + w
            at = np.maximum(np.searchsorted(place, place - span, side="right") - 1, 0)
            beaten = (c[at] < c) & (w[at] <= w) & (v[at] >= v)
            w, c, v = w[~beaten], c[~beaten], v[~beaten]
        if w.size > MAX_STATES:
            raise CoreTooLarge(f"{w.size:,} Pareto states")
        states[row] = (w, c, v)

    choice = np.full(n, -1, dtype=np.int64)
    w0, _, v0 = states[0]
    if not v0.size:
        return None
    top = int(v0.max())
    target_w, target_v, room = int(w0[v0 == top].min()), top, limit
    for row in range(n):
        nw, nc, nv = states[row + 1]
        order = np.lexsort((nc, nv, nw))  # (tokens, value) with the fewest records first
        nw, nc, nv = nw[order], nc[order], nv[order]
        options = np.flatnonzero(scaled.usable[row]).tolist() + ([-1] if delete_ok[row] else [])
        for j in options:  # highest fidelity first, delete last
            dw = int(sub.tokens[row, j]) if j >= 0 else 0
            dv = int(scaled.values[row, j]) if j >= 0 else 0
            kept = int(j >= 0)
            lo, hi = np.searchsorted(nw, [target_w - dw, target_w - dw + 1])
            at = int(lo + np.searchsorted(nv[lo:hi], target_v - dv))
            if at < hi and nv[at] == target_v - dv and nc[at] <= room - kept:
                choice[row] = j
                target_w, target_v, room = target_w - dw, target_v - dv, room - kept
                break
        else:  # pragma: no cover - the states always contain the optimum's suffixes
            raise AssertionError("core reconstruction lost the optimum")
    return choice


UNFIXABLE_CORE = 500  # rows
GUESS_ROWS = (4, 12)  # rows searched, in turn, to find a strong incumbent (measured best of 5 variants)
# ... and under a binding count limit, where the counted DP takes larger guesses (memory-shaped 10,000
# records, 3,000 kept: the 40-row guess finds the optimum, the core falls from 220 rows to 57)
COUNTED_GUESS_ROWS = (4, 16, 40)


def reduce_instance(
    instance: Instance, scaled: Scaled, greedy_choice: np.ndarray | None = None, lp: Relaxation | None = None
) -> Reduction:
    """LP relaxation, a strong incumbent, and bound fixing against it.

    The incumbent is the best of the LP floor and, when that leaves a large core, the exact
    optimum over the GUESS_ROWS rows closest to changing level (all other rows at the LP
    floor): the core that fixing leaves against such an incumbent is usually a handful of rows.
    Under a count limit the starts are the LP floor cut to M records, the greedy allocation and
    the Lagrangian one (cut by density, and trimmed by lighter levels: _trim), each filled into the
    room it leaves (_fill); the guesses are COUNTED_GUESS_ROWS, by the counted DP alone, while the
    core has more rows than the largest of them; where the core stays too large for any DP, the
    GUESS_ROWS guesses from the best unfilled start (the route before the fill) are tried too.
    """
    lp = relax(instance, scaled) if lp is None else lp
    limit = instance.max_records
    if limit is None:
        return _guessed(instance, scaled, lp, fix(lp, scaled, lp.floor), GUESS_ROWS, dense=True)
    incumbent = lp.floor
    if int((incumbent >= 0).sum()) > limit:
        # the LP floor breaks the count limit: keep its `limit` most valuable records
        rows = np.flatnonzero(incumbent >= 0)
        gain = lp.reduced[incumbent[rows], rows]
        incumbent = incumbent.copy()
        incumbent[rows[np.argsort(-gain, kind="stable")[limit:]]] = -1
    lagrangian = _lagrangian_allocation(instance, lp)
    starts = [incumbent] + ([] if greedy_choice is None else [greedy_choice]) + [_density_cut(instance, lp, lagrangian)]
    # each start filled into the room it leaves (and the Lagrangian one trimmed, too); the first of
    # the most valuable
    levels = _levels(instance, scaled, lp)
    trimmed = _trim(instance, levels, lagrangian)
    filled = [_fill(instance, levels, start) for start in starts + [trimmed]]
    red = _guessed(instance, scaled, lp, fix(lp, scaled, max(filled, key=lambda c: scaled_value(scaled, c))),
                   COUNTED_GUESS_ROWS, dense=False)
    if red.core.size > COUNTED_GUESS_ROWS[-1]:
        # the guesses from the best start unfilled find other local optima: a filled start has spent
        # the room a guess could use (noisy strongly correlated utilities, half the lightest levels'
        # tokens, 30 % kept: 1,200-2,000 records, cores of 7-866 rows against 1,149-2,000; 10,000
        # records: 1,662 rows, proven by CP-SAT in 5 s, against 5,585 and no proof in 10 s)
        other = _guessed(instance, scaled, lp, fix(lp, scaled, max(starts, key=lambda c: scaled_value(scaled, c))),
                         GUESS_ROWS, dense=True)
        if other.incumbent_value > red.incumbent_value:
            # ... and the counted guesses again from there: a better incumbent lets them prune harder
            # (noisy correlated utilities, 1,000-10,000 records: 4 of 8 shapes went to CP-SAT, 1-10 s)
            red = _guessed(instance, scaled, lp, other, COUNTED_GUESS_ROWS, dense=False)
    return red


def _guessed(
    instance: Instance, scaled: Scaled, lp: Relaxation, red: Reduction, guesses: tuple[int, ...], *, dense: bool
) -> Reduction:
    """The reduction against better incumbents from exact solves of the rows closest to changing
    level (all others at the incumbent's), small guesses first: each better incumbent makes the
    next, larger search prune harder. Without ``dense`` (under a count limit) a guess is tried by
    the counted DP alone, and a core of up to the largest guess goes to it as it is (a guess over all
    its levels costs more than the core over the levels the bound left)."""
    for rows in guesses:
        if red.core.size <= (rows if dense else guesses[-1]):
            break
        guess = closest_rows(lp, rows)
        trial = replace(red, core=guess, fixed_choice=_outside(red.incumbent, guess),
                        keep=_keep_guess(red.keep, guess, red.incumbent, instance.k))
        choice = _solve_core(instance, scaled, trial, dense=dense)
        if choice is not None and scaled_value(scaled, choice) > red.incumbent_value:
            red = fix(lp, scaled, choice)
    return red


def _lagrangian_allocation(instance: Instance, lp: Relaxation) -> np.ndarray:
    """Each row's best level at (λ, μ): at most M rows gain, but the tokens may pass the budget."""
    k = instance.k
    best = np.argmax(lp.reduced, axis=0)
    return np.where((best == k) | (lp.row_best <= 0), -1, best)


def _density_cut(instance: Instance, lp: Relaxation, choice: np.ndarray) -> np.ndarray:
    """An allocation cut back to the budget by dropping its least valuable records per token."""
    choice = choice.copy()
    rows = np.flatnonzero(choice >= 0)
    tokens = instance.tokens[rows, choice[rows]]
    if int(tokens.sum()) > instance.budget:
        density = lp.row_best[rows] / np.maximum(tokens, 1)
        order = np.argsort(density, kind="stable")  # least valuable per token first
        excess = int(tokens.sum()) - instance.budget
        dropped = np.cumsum(tokens[order])
        cut = order[: int(np.searchsorted(dropped, excess)) + 1]
        choice[rows[cut]] = -1
    return choice


FILL_MOVES = 20_000  # candidate moves _fill tries, least reduced-cost loss first
FILL_MISSES = 2_000  # ... stopping after this many in a row that do not fit (the room is spent: measured
# on the Pisinger and memory-shaped classes, every move taken came before the first miss of a Lagrangian
# start, and a cut start's moves come in one run)


@dataclass(frozen=True)
class Levels:
    """Every level of every row as the moves of _fill and _trim compare them, (n, k+1), delete last:
    tokens, values (0 where not usable) and reduced values at (λ, μ) (-inf where not usable)."""

    sizes: np.ndarray
    values: np.ndarray
    reduced: np.ndarray


def _levels(instance: Instance, scaled: Scaled, lp: Relaxation) -> Levels:
    """The levels' numbers for _fill and _trim, computed once for all their starts."""
    n, k = instance.n, instance.k
    sizes = np.zeros((n, k + 1), dtype=np.int64)
    sizes[:, :k] = instance.tokens
    values = np.zeros((n, k + 1), dtype=np.int64)
    values[:, :k] = np.where(scaled.usable, scaled.values, 0)
    reduced = np.where(lp.usable, lp.reduced, -np.inf).T
    reduced[:, :k][~scaled.usable] = -np.inf
    return Levels(sizes, values, reduced)


def _trim(instance: Instance, levels: Levels, choice: np.ndarray) -> np.ndarray:
    """An allocation within the count limit cut back to the budget by moves to lighter levels
    (delete included), least reduced-cost loss per token freed first: the Lagrangian allocation
    usually overshoots the budget by a fraction of one record, which a lower fidelity frees."""
    n, k = instance.n, instance.k
    sizes, reduced = levels.sizes, levels.reduced
    rows = np.arange(n)
    at = np.where(choice >= 0, choice, k)
    used = int(sizes[rows, at].sum())
    while used > instance.budget:
        freed = sizes[rows, at][:, None] - sizes
        r, j = np.nonzero((freed > 0) & (reduced > -np.inf))
        # (delete is always a lighter move, worth exactly 0: a row holding tokens always has one)
        assert r.size, "no lighter level frees the tokens over the budget"
        order = np.argsort((reduced[r, at[r]] - reduced[r, j]) / freed[r, j], kind="stable")
        moved = np.zeros(n, dtype=bool)
        for i, level in zip(r[order].tolist(), j[order].tolist(), strict=True):
            if used <= instance.budget:
                break
            if not moved[i]:  # one move a row a round: its next ones start from its new level
                used -= int(sizes[i, at[i]] - sizes[i, level])
                at[i], moved[i] = level, True
    return np.where(at == k, -1, at)


def _fill(instance: Instance, levels: Levels, choice: np.ndarray) -> np.ndarray:
    """A feasible allocation improved by single-row moves into the tokens and records it leaves
    free (or that a move frees), each gaining value, taken in order of their loss at (λ, μ): the
    cut and greedy allocations under a count limit often leave a record's place or some tokens
    unused, and a weak incumbent leaves a large core."""
    n, k = instance.n, instance.k
    choice = np.asarray(choice, dtype=np.int64)
    at = np.where(choice >= 0, choice, k)
    rows = np.arange(n)
    sizes, values, reduced = levels.sizes, levels.values, levels.reduced
    gain = values - values[rows, at][:, None]
    loss = reduced[rows, at][:, None] - reduced
    used = int(sizes[rows, at].sum())
    kept = int((at < k).sum())
    limit = n if instance.max_records is None else instance.max_records
    # the room never grows by more than the moves to lighter levels free, and never in records
    # (a move that drops a record loses its value): moves past that room are not tried
    grow = sizes - sizes[rows, at][:, None]
    can = (reduced > -np.inf) & (gain > 0)
    room = instance.budget - used + int(-grow[can & (grow < 0)].sum())
    can &= grow <= room
    if kept >= limit:
        can[:, :k] &= (at < k)[:, None]
    move_rows, move_levels = np.nonzero(can)
    losses = loss[move_rows, move_levels]
    if losses.size > FILL_MOVES:  # the least losses first: a selection, then a sort of those
        head = np.argpartition(losses, FILL_MOVES)[:FILL_MOVES]
        order = head[np.argsort(losses[head], kind="stable")]
    else:
        order = np.argsort(losses, kind="stable")
    misses = 0
    for i, j in zip(move_rows[order].tolist(), move_levels[order].tolist(), strict=True):
        now = int(at[i])
        dw = int(sizes[i, j] - sizes[i, now])
        dc = int(j < k) - int(now < k)
        if values[i, j] > values[i, now] and used + dw <= instance.budget and kept + dc <= limit:
            at[i], used, kept, misses = j, used + dw, kept + dc, 0
        else:
            misses += 1
            if misses > FILL_MISSES:
                break
    return np.where(at == k, -1, at)


def _outside(incumbent: np.ndarray, guess: np.ndarray) -> np.ndarray:
    fixed = incumbent.copy()
    fixed[guess] = -1
    return fixed


def _keep_guess(keep: np.ndarray, guess: np.ndarray, incumbent: np.ndarray, k: int) -> np.ndarray:
    """Rows outside the guess keep only their incumbent level; guess rows keep what survived."""
    out = np.zeros_like(keep)
    out[np.arange(keep.shape[0]), np.where(incumbent >= 0, incumbent, k)] = True
    out[guess] = keep[guess]
    return out


def _solve_core(instance: Instance, scaled: Scaled, red: Reduction, *, dense: bool = True,
                proofs: bool = False) -> np.ndarray | None:
    """The full allocation with the core solved exactly, or None when no DP can take the core
    (``dense``: the dense DP may try a core too large for the sparse one). ``proofs``: raise
    IncumbentOptimal where no DP takes the core but the counted DP proved the incumbent's value."""
    choice = red.fixed_choice.copy()
    if not red.core.size:
        return choice
    sub, sub_scaled = sub_instance(instance, scaled, red)
    core_choice = None
    proven: IncumbentOptimal | None = None
    # when bound fixing could not shrink a large instance (Pisinger's correlated classes), the
    # Pareto sets explode; CP-SAT is measured faster there, so the DP does not try
    unfixable = red.core.size > UNFIXABLE_CORE and 2 * red.core.size > instance.n
    if sub.max_records is not None and sub.max_records >= sub.n:
        sub = replace(sub, max_records=None)
    if not unfixable:
        start = red.incumbent[red.core]
        rows = np.flatnonzero(start >= 0)
        floor = int(sub_scaled.values[rows, start[rows]].sum())
        delete_ok = red.keep[red.core, instance.k]
        try:
            if sub.max_records is None:
                core_choice = pareto_dp(sub, sub_scaled, delete_ok, red.multiplier, floor)
            else:
                core_choice = _counted_core(sub, sub_scaled, delete_ok, red, floor)
        except IncumbentOptimal as proof:
            proven = proof if proofs else None
        except CoreTooLarge:
            pass
    if core_choice is None and dense:
        core_choice = _dense_core(sub, sub_scaled)
        if core_choice is None and sub.max_records is not None:
            # the table with a count dimension is too large; without it, the core's tie-rule
            # optimum is the limited one whenever it keeps no more than the limit (it is then a
            # limited optimum, and first in the tie order among a superset of them)
            free = _dense_core(replace(sub, max_records=None), sub_scaled)
            if free is not None and int((free >= 0).sum()) <= sub.max_records:
                core_choice = free
    if core_choice is None:
        if proven is not None:
            raise proven
        return None
    choice[red.core] = core_choice
    return choice


# The counted DP first prunes every state whose bound falls more than a share of the core's gap (bound
# less incumbent) below the bound: FIRST_SHARE, doubled while nothing reaches the floor; where a share's
# states overflow, the shares between it and the last one that found nothing are bisected this often.
# (Noisy correlated utilities: 1,000 records, 90 % of the unlimited optimum's records kept, the optimum
# 0.35 units below the bound and 2.8 above the incumbent: a core of 276 rows solved at a share of 1/8;
# 10,000 records, 1,069 rows, the optimum at 0.036 of the gap: overflowing at 1/16, solved at 5/128.)
FIRST_SHARE = 1 / 64
BISECTIONS = 3


def _counted_core(
    sub: Instance, scaled: Scaled, delete_ok: np.ndarray, red: Reduction, floor: int
) -> np.ndarray | None:
    """The core's tie-rule optimum under a count limit by the counted DP, pruned at floors just below
    the bound first: an allocation found at or above such a floor is the optimum (every optimum is
    worth as much, so its states outlive the pruning, and the reconstruction finds the first of them);
    below it, a lower floor is tried, down to the incumbent's value. None when no floor reaches one;
    CoreTooLarge when the states overflow at every floor tried (IncumbentOptimal where the floors tried
    prove the incumbent's value optimal all the same)."""
    assert sub.max_records is not None
    best = _row_bests(sub, scaled, delete_ok, red.multiplier, red.count_price)
    bound = red.multiplier * sub.budget + red.count_price * sub.max_records + float(best.sum())
    if not np.isfinite(bound) or bound <= floor:
        return pareto_dp_counted(sub, scaled, delete_ok, red.multiplier, red.count_price, floor)

    # every allocation's value is a multiple of the levels' gcd (integer utilities: a whole unit), so a
    # floor rounds up to one, and floors between two multiples are the same trial
    grid = max(1, int(np.gcd.reduce(scaled.values[scaled.usable]))) if scaled.usable.any() else 1
    tried: dict[int, tuple[bool, np.ndarray | None] | None] = {}  # by floor; None: the states overflowed
    # the bound's rounding, as the counted DP allows for it (its terms may cancel: rows that must be
    # kept have negative bests)
    rounding = 1e-9 * (abs(float(best.sum())) + red.multiplier * sub.budget + red.count_price * sub.max_records) + 1.0

    def past_bound(value: int) -> bool:
        """No allocation is worth ``value``: it is above the bound, past its rounding."""
        return bound + rounding < value

    def at(share: float) -> tuple[bool, np.ndarray | None]:
        """(whether the share's floor holds the optimum, the optimum), CoreTooLarge on overflow."""
        trial = floor if share >= 1.0 else max(floor, -(-int(bound - share * (bound - floor)) // grid) * grid)
        if trial not in tried and trial > floor and past_bound(trial):
            tried[trial] = False, None  # rounded up past the bound: nothing reaches it
        if trial not in tried:
            tried[trial] = None
            choice = pareto_dp_counted(sub, scaled, delete_ok, red.multiplier, red.count_price, trial)
            tried[trial] = trial == floor or (choice is not None and scaled_value(scaled, choice) >= trial), choice
        if tried[trial] is None:
            raise CoreTooLarge(f"the counted DP's states overflowed at the floor {trial}")
        return tried[trial]

    below, share = 0.0, FIRST_SHARE  # `below`: the largest share whose floor was above the optimum
    while True:
        try:
            holds, choice = at(share)
        except CoreTooLarge:
            above = share
            for _ in range(BISECTIONS):
                middle = (below + above) / 2
                try:
                    holds, choice = at(middle)
                except CoreTooLarge:
                    above = middle
                    continue
                if holds:
                    return choice
                below = middle
            # every value is a multiple of the grid: where nothing reaches the floor one step above the
            # incumbent's (or the bound is below it), the incumbent's value is the optimum
            step = tried.get(floor + grid, (True, None))
            if past_bound(floor + grid) or (step is not None and not step[0]):
                raise IncumbentOptimal(f"no allocation worth {floor + grid} or more") from None
            raise
        if holds:
            return choice
        below, share = share, min(1.0, 2 * share)


def solve_reduced(
    instance: Instance, scaled: Scaled, greedy_choice: np.ndarray | None = None
) -> tuple[Solution, Reduction]:
    """Exact tie-rule optimum: reductions, then the core (sparse DP, else dense DP)."""
    red = reduce_instance(instance, scaled, greedy_choice)
    detail = f"core {red.core.size} of {instance.n} records"
    choice = _solve_core(instance, scaled, red)
    if choice is None:
        empty = np.full(instance.n, -1)
        return make_solution(instance, scaled, empty, SKIPPED, "dp", detail=detail + "; too large for the DP"), red
    solution = make_solution(instance, scaled, choice, OPTIMAL, "dp", detail=detail)
    return replace(solution, bound=solution.objective), red


TIES_BY_SEARCH = "too many tied optima to order by fidelity: fewest tokens, then the search's order"


def solve_kernel_reduced(
    instance: Instance,
    scaled: Scaled,
    *,
    bounded_ties: bool = True,
    free: tuple[KernelResult, Evaluated] | None = None,
) -> tuple[Solution, Reduction] | None:
    """The compiled kernel's tie-rule optimum and its reduction, or None when the kernel cannot
    answer: past its state limit, or when no price per kept record meets a count limit exactly.

    A binding count limit is met by a price μ per kept record (:func:`.kernel.solve_kernel_counted`);
    the reduction is the priced instance's, which keeps every allocation tying the optimum's
    value and tokens, so CP-SAT's core still holds that optimum. The caller checks
    :func:`.kernel.applies` first. ``free``: the unlimited solve and its allocation's worth, when
    the caller has them (:func:`.kernel.solve_job`).
    """
    unlimited = free[0] if free else None
    if instance.max_records is not None:
        if unlimited is None:
            unlimited = solve_kernel(instance, scaled, bounded_ties=bounded_ties)
            if unlimited is None:
                return None
        if int((unlimited.choice >= 0).sum()) > instance.max_records and not _prices_first(instance, scaled):
            counted = _solve_counted(instance, scaled)
            if counted is not None:
                return counted
    found = solve_kernel_counted(instance, scaled, bounded_ties=bounded_ties, free=unlimited)
    if found is None:
        return None
    result, price = found
    kept = int((result.choice >= 0).sum())
    value = result.value + price * kept  # the priced value plus what the kept records paid
    fixed_choice = result.choice.copy()
    fixed_choice[result.core] = -1
    reduction = Reduction(
        multiplier=result.multiplier,
        upper_bound=result.upper_bound + price * kept,  # U(λ, μ) = U_μ(λ) + μ·M, and kept = M
        incumbent=result.choice,
        incumbent_value=value,
        keep=result.keep,
        core=result.core,
        fixed_choice=fixed_choice,
        hull_levels=result.hull_levels,
        lp_dominated=result.lp_dominated,
        count_price=float(price),
    )
    detail = f"core {reduction.core.size} of {instance.n} records"
    if price:
        detail += f"; count limit met at a price of {price / scaled.scale:.6g} per kept record"
    if not result.tie_rule:
        detail += "; " + TIES_BY_SEARCH
    if free is not None and result is free[0]:  # evaluated in the same call, as make_solution does
        worth = free[1]
        solution = Solution(result.choice, worth.objective, worth.utility, worth.tokens, OPTIMAL, "dp",
                            scaled_objective=worth.scaled_value, detail=detail)
    else:
        solution = make_solution(instance, scaled, result.choice, OPTIMAL, "dp", detail=detail)
    if solution.scaled_objective != value or solution.tokens_used != result.tokens:
        raise SolverError(
            f"the compiled kernel reported value {value} with {result.tokens} tokens, but its "
            f"allocation is worth {solution.scaled_objective} with {solution.tokens_used}"
        )
    return replace(solution, bound=solution.objective), reduction


# Up to this many records the kernel's prices go first: where a price answers, its exact reduction
# fixes more records than the numpy one (the bundled example's traces: "bound", not "search"), and a
# failed bisection costs at most ~0.1 s there (strongly correlated and subset-sum, 50 records; at 1,000
# it costs 0.16 s and 3 s against the counted DP's 6 and 10 ms).
PRICES_FIRST_ROWS = 64
# ... and up to PRICED_MAX_ROWS where the levels' values are nearly all distinct (float utilities, the
# memory-shaped records of a store): a price then rarely meets a level worth exactly it, and answers in
# a few kernel solves (memory-shaped 10,000 records, 12 kept: 7.5 ms, the counted DP 24 ms). Values on a
# coarse grid (integer utilities) tie at the price and send the bisection to its end.
DISTINCT_FOR_PRICES = 0.9


def _prices_first(instance: Instance, scaled: Scaled) -> bool:
    """Whether the kernel's prices go before the counted DP on a binding count limit."""
    if instance.n <= PRICES_FIRST_ROWS:
        return True
    if instance.n > PRICED_MAX_ROWS:
        return False
    values = np.sort(scaled.values[scaled.usable])  # (np.unique without an inverse hashes: 11 ms on 40,000)
    return 1 + np.count_nonzero(values[1:] != values[:-1]) >= DISTINCT_FOR_PRICES * values.size


def _solve_counted(instance: Instance, scaled: Scaled) -> tuple[Solution, Reduction] | None:
    """A binding count limit by the numpy reduction at (λ, μ) and the counted sparse DP on its
    core, or by tied.py where the bound is met at zero loss (first where most rows tie, else where
    the core is too large for the DP); None where neither answers. Tried before the kernel's prices
    except on distinct values: where a level is worth exactly the price or the count jumps past the
    limit (integer utilities) the prices fail after up to MAX_PRICES kernel solves."""
    lp = relax(instance, scaled)
    tried = _mostly_tied(lp)
    if tried:  # the degenerate classes: no bound prunes the counted DP's states (tied.py)
        found = _tied_solution(instance, scaled, lp)
        if found is not None:
            return found
    red = reduce_instance(instance, scaled, lp=lp)
    # (where the kernel's prices will not run, the dense DP may take a core too large for this one)
    try:
        choice = _solve_core(instance, scaled, red, dense=instance.n > PRICED_MAX_ROWS, proofs=True)
    except IncumbentOptimal:
        # tied.py's answer, where it has one, applies the whole tie rule; the incumbent only its first step
        found = None if tried else _tied_solution(instance, scaled, lp)
        return found if found is not None else _incumbent_solution(instance, scaled, red)
    if choice is None:
        return None if tried else _tied_solution(instance, scaled, lp)
    detail = f"core {red.core.size} of {instance.n} records; count limit by the counted DP"
    solution = make_solution(instance, scaled, choice, OPTIMAL, "dp", detail=detail)
    return replace(solution, bound=solution.objective), red


def every_optimum_fills_the_budget(red: Reduction, value: float, tokens: int, budget: int) -> bool:
    """Whether an optimum worth ``value`` (scaled) with ``tokens`` has the fewest tokens of any optimum:
    it fills the budget, and the bound U(λ, μ) is less than λ above its value. (Any allocation is worth U
    less its levels' reduced losses, λ per token it leaves unused and μ per record under the limit: one
    token short would cost more than the gap, so every optimum fills the budget too.)"""
    if tokens != budget:
        return False
    gap = red.upper_bound - value
    return red.multiplier > gap + 1e-9 * abs(red.upper_bound) + 1.0


def _incumbent_solution(instance: Instance, scaled: Scaled, red: Reduction) -> tuple[Solution, Reduction] | None:
    """The incumbent, where the counted DP proved its value optimal (IncumbentOptimal) and every optimum
    fills the budget (so it has the fewest tokens, as CP-SAT's answer would; the fidelity order among
    the optima is not applied, also as there); else None."""
    solution = make_solution(instance, scaled, red.incumbent, OPTIMAL, "dp")
    assert solution.scaled_objective is not None
    if not every_optimum_fills_the_budget(red, solution.scaled_objective, solution.tokens_used, instance.budget):
        return None
    detail = (f"core {red.core.size} of {instance.n} records; count limit: no allocation is worth a step of the "
              f"values' grid more than the incumbent; {TIES_BY_SEARCH}")
    return replace(solution, bound=solution.objective, detail=detail), red


# tied.py goes before the counted DP where more than this share of the rows has two options or more of
# zero reduced loss at (λ, μ) (strongly correlated and subset-sum: every row; memory-shaped, noisy: none)
TIED_SHARE = 0.5


def _mostly_tied(lp: Relaxation) -> bool:
    """Whether more than TIED_SHARE of the rows have two or more options of zero loss at (λ, μ)."""
    if not lp.row_best.size:
        return False
    loss = lp.row_best - np.where(lp.usable, lp.reduced, -np.inf)
    tolerance = 1e-9 * (np.abs(lp.row_best) + 1.0)
    return bool(((loss <= tolerance).sum(axis=0) >= 2).mean() > TIED_SHARE)


def _tied_solution(instance: Instance, scaled: Scaled, lp: Relaxation) -> tuple[Solution, Reduction] | None:
    """tied.py's answer with the reduction against it, or None."""
    choice = tied_counted(instance, scaled, lp)
    if choice is None:
        return None
    red = fix(lp, scaled, choice)
    detail = (f"core {red.core.size} of {instance.n} records; count limit met at the bound, every record at a "
              "level worth its price")
    solution = make_solution(instance, scaled, choice, OPTIMAL, "dp", detail=detail)
    return replace(solution, bound=solution.objective), red


def _dense_core(sub: Instance, scaled: Scaled) -> np.ndarray | None:
    """A count-limited (or oversized) core by the dense DP when its table fits, else None.

    The dense DP always offers delete, also where the bound removed it: a superset of choices
    whose extra members are in no optimum, so the tie-rule optimum is unchanged.
    """
    solution = dense_dp(sub, scaled)  # status `skipped` past its own table-size limit
    return solution.choice if solution.status == OPTIMAL else None


def solve_cpsat_reduced(
    instance: Instance, scaled: Scaled, red: Reduction, *, time_limit_s: float, fewest_tokens: bool = False
) -> Solution:
    """CP-SAT on the core only, hinted with the incumbent; fixed rows keep their levels.
    ``fewest_tokens``: the optimum with the fewest tokens (where CP-SAT's allocation is reported)."""
    choice = red.fixed_choice.copy()
    detail = f"core {red.core.size} of {instance.n} records"
    if not red.core.size:
        solution = make_solution(instance, scaled, choice, OPTIMAL, "cp-sat", detail=detail)
        return replace(solution, bound=solution.objective)
    sub, sub_scaled = sub_instance(instance, scaled, red)
    # the incumbent hint speeds up small cores (28 rows: 0.27 s -> 0.015 s) but slows CP-SAT when
    # bound fixing failed and the core is the whole instance (weakly correlated, 1,000: 0.6 -> 1.4 s)
    hint = red.incumbent[red.core] if 2 * red.core.size < instance.n else None
    core = solve_cpsat(sub, sub_scaled, time_limit_s=time_limit_s, hint=hint, fallback=red.incumbent[red.core],
                       fewest_tokens=fewest_tokens)
    choice[red.core] = core.choice
    solution = make_solution(instance, scaled, choice, core.status, "cp-sat", detail=core.detail or detail)
    fixed_value = solution.objective - core.objective
    if core.status == OPTIMAL:
        bound: float | None = solution.objective
    elif core.status == TIME_LIMIT:
        # the reduction's Lagrangian bound holds for every allocation, whatever CP-SAT proved in time:
        # in objective units, over the scale, plus each kept level's rounding to the scaled integers
        lagrangian = (red.upper_bound + 0.5 * instance.n) / scaled.scale
        bound = lagrangian if core.bound is None else min(fixed_value + core.bound, lagrangian)
    else:
        bound = None if core.bound is None else fixed_value + core.bound
    return replace(solution, bound=bound)
