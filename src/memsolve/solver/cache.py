"""The allocation with the prompt cache in its objective (DESIGN §15), solved exactly.

The previous turn's prompt held records p_0 … p_{m-1} in that order. This turn's prompt puts the
records kept unchanged (same record, same level, same text) first, in the previous order, so the
provider's cached prefix stays intact up to the first previous record that is not kept: with the
first c kept, the prefix holds A_c = s(p_0) + … + s(p_{c-1}) tokens. The objective is

    Σ_i (u_ij − price · s_ij) + bonus[c] + constant

where ``price`` already holds the cache's write price per token (every token is billed at the
write multiplier unless it is read from the cache) and ``bonus[c]`` is the value of reading the
intact prefix at the read multiplier instead (:mod:`memsolve.cache` builds both).

Solved as one knapsack per cut point (:func:`solve_cuts`): for c = 0 … m, the first c previous
records are fixed at their previous levels and the rest is an ordinary instance that the
registered exact engines solve (the kernel, with its reductions and certificate). A cut's
knapsack does not forbid keeping p_c too; that only relaxes it (keeping more is never worth less,
since the bonus grows with the prefix), so the best over cuts is the exact optimum.

The first, unconstrained cut's optimum plus ``bonus[c]`` bounds every cut c. The longest feasible
cut is solved next, then the cuts between two solved ones by bisection: the knapsack part K_c
never grows with c and the bonus never shrinks, so a cut between a and b is worth at most
K_a + bonus[c] (and at most a Lagrangian bound, the capacity priced, :func:`lagrangian_bounds`),
and when K_a = K_b none beats b. The certificate lists each cut as solved, pruned by such a
bound, or infeasible.

Two independent exact checks: :func:`flag_dp`, a dense DP over capacity with one intact/broken
flag (the intact state is a single point, so the table is the plain DP's), and :func:`solve_cpsat_cache`
(CP-SAT with one Boolean per cut). All three work on the integers of one scale
(:func:`.instance.scale` of the instance plus the bonus at the same scale) and must agree exactly.

Ties: the highest scaled objective; among equal ones the longest intact prefix; inside a cut,
the engines' tie rule.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from ..errors import SolverError
from . import engines
from .instance import OPTIMAL, SKIPPED, TIME_LIMIT, Instance, Scaled, Solution, make_solution, scale, scaled_value

_NEG = np.int64(-(2**62))
# the flag DP's table (cells) beyond which it declines, as the plain dense cross-check does
FLAG_DP_CELLS = engines.DENSE_CROSS_CHECK_CELLS


@dataclass(frozen=True)
class CacheProblem:
    """An instance with the previous turn's prompt order laid over its rows.

    ``rows[i]``/``levels[i]``: the instance row and level column of the i-th record of the
    previous prompt, -1 where it can no longer be kept as it was (not eligible now, the level not
    offered, its text changed); ``bonus[c]`` (c = 0 … m): the value of the cache read when the
    first c stay intact (non-decreasing in c); ``constant``: the part of the cost no choice
    changes (the fixed prefix before the memories).
    """

    instance: Instance
    rows: np.ndarray  # int64 (m,)
    levels: np.ndarray  # int64 (m,)
    bonus: np.ndarray  # float64 (m + 1,)
    constant: float = 0.0

    @property
    def m(self) -> int:
        return len(self.rows)

    def keepable(self) -> int:
        """How many previous records, from the first, can stay as they were (ignoring the budget)."""
        ok = (self.rows >= 0) & (self.levels >= 0)
        return int(np.argmin(ok)) if not ok.all() else self.m

    def prefix_tokens(self, c: int) -> int:
        """Tokens of the first c previous records at their kept levels."""
        if c == 0:
            return 0
        rows, levels = self.rows[:c], self.levels[:c]
        return int(self.instance.tokens[rows, levels].sum())

    def intact(self, choice: np.ndarray) -> int:
        """How many previous records, from the first, ``choice`` keeps as they were."""
        c = 0
        while c < self.m and self.rows[c] >= 0 and self.levels[c] >= 0 and choice[self.rows[c]] == self.levels[c]:
            c += 1
        return c

    def objective(self, choice: np.ndarray) -> float:
        """The full objective of a choice (floating point, as reported)."""
        net = make_solution(self.instance, None, choice, OPTIMAL, "").objective
        return net + float(self.bonus[self.intact(choice)]) + self.constant


@dataclass(frozen=True)
class Cut:
    """One cut point of the certificate: the first ``intact`` previous records fixed as they were."""

    intact: int
    outcome: str  # solved, pruned (its bound cannot beat the optimum), infeasible (over budget or count)
    scaled: int | None = None  # the scaled objective (solved) or its bound (pruned)
    objective: float | None = None  # the full objective of its allocation (computed for the optimum's runner-up)
    choice: np.ndarray | None = None

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"intact": self.intact, "outcome": self.outcome}
        if self.objective is not None:
            out["objective"] = self.objective
        return out


@dataclass(frozen=True)
class CacheSolution:
    """The optimum over the cuts, its certificate, and the best allocation that changes less."""

    solution: Solution  # objective and bound: the full objective (bonus and constant included)
    intact: int  # previous records kept at the head of the prompt
    cuts: tuple[Cut, ...]  # one per cut point 0 … m, in that order
    without: Cut | None  # the best allocation keeping the first changed record too (None: no such choice)
    scale: float

    @property
    def solved(self) -> int:
        return sum(cut.outcome == "solved" for cut in self.cuts)


def _bonus_scaled(problem: CacheProblem, scaled: Scaled) -> np.ndarray:
    return np.rint(problem.bonus * scaled.scale).astype(np.int64)


def _cut_limit(problem: CacheProblem) -> int:
    """The longest cut that fits the budget and the count limit."""
    inst = problem.instance
    c = problem.keepable()
    if c and inst.max_records is not None:
        c = min(c, inst.max_records)
    while c and problem.prefix_tokens(c) > inst.budget:
        c -= 1
    return c


def lagrangian_bounds(problem: CacheProblem, scaled: Scaled, bonus: np.ndarray, top: int) -> np.ndarray:
    """An upper bound on each cut's scaled objective (c = 0 … top), from the capacity constraint
    priced at μ (any μ ≥ 0 bounds a knapsack: μ·B + Σ_i max(0, max_j v_ij − μ·s_ij); the count
    limit is dropped, which only loosens it); the least over a grid of μ at the quantiles of the
    levels' value per token. The fixed records of a cut enter at their own value less μ·tokens."""
    inst = problem.instance
    usable = scaled.usable
    values, tokens = scaled.values.astype(np.float64), inst.tokens.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        efficiency = np.sort((values / tokens)[usable & (inst.tokens > 0)])
    picks = np.linspace(0, efficiency.size - 1, 9).astype(np.int64) if efficiency.size else np.zeros(0, np.int64)
    grid = np.unique(np.concatenate([[0.0], efficiency[picks]]))
    if inst.k == 1:  # the common case: one level, no maximum over levels
        best = np.where(usable, values - tokens * grid[None, :], 0.0)
    else:
        net = np.where(usable[:, :, None], values[:, :, None] - tokens[:, :, None] * grid[None, None, :], 0.0)
        best = net.max(axis=1) if inst.k else np.zeros((inst.n, grid.size))
    best = np.maximum(best, 0.0)  # (n, G)
    rows, levels = problem.rows[:top], problem.levels[:top]
    fixed = (values[rows, levels][:, None] - tokens[rows, levels][:, None] * grid[None, :]) - best[rows]
    bound = grid * inst.budget + best.sum(axis=0) + np.vstack([np.zeros((1, grid.size)), np.cumsum(fixed, axis=0)])
    # rounded up, with room for the floating-point sums (values stay below 2**52)
    return np.ceil(bound.min(axis=1) * (1 + 1e-12) + 1.0).astype(np.int64) + bonus[: top + 1]


def solve_cuts(problem: CacheProblem, engine: str = "dp", *, time_limit_s: float = 10.0) -> CacheSolution:
    """The exact optimum of the cache objective: one knapsack per cut point, pruned by bound."""
    inst = problem.instance
    scaled = scale(inst)
    bonus = _bonus_scaled(problem, scaled)
    top = _cut_limit(problem)
    cuts: dict[int, Cut] = {}
    proven = True

    def solve(c: int) -> Cut:
        nonlocal proven
        rows, levels = problem.rows[:c], problem.levels[:c]
        free = np.ones(inst.n, dtype=bool)
        free[rows] = False
        sub = Instance(inst.tokens[free], inst.utility[free], inst.mask[free],
                       inst.budget - problem.prefix_tokens(c), inst.price,
                       None if inst.max_records is None else inst.max_records - c)
        found = engines.solve(engines.Job(sub, time_limit_s), engine)
        proven &= found.status == OPTIMAL
        choice = np.full(inst.n, -1, dtype=np.int64)
        choice[free] = found.choice
        choice[rows] = levels
        return Cut(c, "solved", scaled_value(scaled, choice) + int(bonus[c]), None, choice)

    first = cuts[0] = solve(0)
    unconstrained = first.scaled - int(bonus[0]) if first.scaled is not None else 0
    best = first

    def beats(value: int, c: int, than: Cut) -> bool:
        assert than.scaled is not None
        return value > than.scaled or (value == than.scaled and c > than.intact)

    lagrangian: list[np.ndarray] = []  # computed when a cut is first bounded (a turn with one cut needs none)
    knapsack = {0: unconstrained}  # the knapsack part K_c of each solved cut: non-increasing in c

    def bounds(c: np.ndarray | range, k_above: int) -> np.ndarray:
        """Upper bounds of cuts ``c`` whose knapsack part is at most ``k_above``."""
        if not lagrangian:
            lagrangian.append(lagrangian_bounds(problem, scaled, bonus, top))
        at = np.asarray(c, dtype=np.int64)
        return np.minimum(k_above + bonus[at], lagrangian[0][at])

    def settle(c: int) -> None:
        nonlocal best
        cut = cuts[c] = solve(c)
        assert cut.scaled is not None
        knapsack[c] = cut.scaled - int(bonus[c])
        if beats(cut.scaled, c, best):
            best = cut

    if top > 0 and (not proven or beats(unconstrained + int(bonus[top]), top, best)):
        settle(top)  # else no cut beats the first: K_c + bonus[c] <= K_0 + bonus[top] for every c
    # Divide and conquer over the cuts between two solved ones: K is non-increasing and the bonus
    # non-decreasing, so a cut strictly between a and b is worth at most K_a + bonus[c]; when
    # K_a = K_b every one of them is worth at most cut b (which wins ties, being longer).
    pending = [(0, top)] if top in knapsack else []
    while pending:
        a, b = pending.pop()
        inner = range(a + 1, b)
        if not inner:
            continue
        ceiling = bounds(inner, knapsack[a]).tolist()
        open_ = [c for c, v in zip(inner, ceiling, strict=True) if not proven or beats(int(v), c, best)]
        if knapsack[a] == knapsack[b] and proven:
            open_ = []
        for c, v in zip(inner, ceiling, strict=True):
            if c not in open_:
                cuts[c] = Cut(c, "pruned", int(v))
        if not open_:
            continue
        mid = open_[len(open_) // 2]
        settle(mid)
        pending += [(a, mid), (mid, b)]  # the longer half first: its bonus is higher
    if top > 0 and top not in knapsack:  # the longest cut could not beat the first: neither can any other
        for c in range(1, top):
            cuts[c] = Cut(c, "pruned", int(bounds([c], unconstrained)[0]))
    for c in range(top + 1, problem.m + 1):
        cuts[c] = Cut(c, "infeasible")

    assert best.choice is not None and best.scaled is not None
    intact = problem.intact(best.choice)
    if intact != best.intact:  # a cut's knapsack kept more than it had to: the longer cut ties it
        raise SolverError(f"cache cuts: the best allocation keeps {intact} records intact, its cut {best.intact}")
    without = _without(problem, cuts, best, bonus, solve)
    if without is not None and without.choice is not None:  # its objective in floating point, as reported
        without = cuts[without.intact] = replace(without, objective=problem.objective(without.choice))
    solution = make_solution(inst, scaled, best.choice, OPTIMAL if proven else TIME_LIMIT, engine)
    objective = problem.objective(best.choice)
    bounds = [cut.scaled for cut in cuts.values() if cut.outcome in ("solved", "pruned") and cut.scaled is not None]
    solution = replace(solution, objective=objective, scaled_objective=best.scaled,
                       bound=objective if proven else max(bounds) / scaled.scale + problem.constant,
                       detail=f"cache objective: {sum(c.outcome == 'solved' for c in cuts.values())} of "
                              f"{problem.m + 1} cut points solved")
    ordered = tuple(cuts[c] for c in range(problem.m + 1))
    return CacheSolution(solution, intact, ordered, without, scaled.scale)


def _without(problem: CacheProblem, cuts: dict[int, Cut], best: Cut, bonus: np.ndarray,
             solve: Callable[[int], Cut]) -> Cut | None:
    """The best cut that keeps the first changed record as well (a cut above the optimum's): what
    the change was weighed against. Cuts pruned while finding the optimum are solved here unless
    their bound (the least of their own and the first such cut's knapsack plus their bonus) cannot
    beat the best of them."""
    above = [c for c in range(best.intact + 1, problem.m + 1) if cuts[c].outcome != "infeasible"]
    if not above:
        return None
    if cuts[above[0]].outcome == "pruned":
        cuts[above[0]] = solve(above[0])
    runner = cuts[above[0]]
    assert runner.scaled is not None
    ceiling = runner.scaled - int(bonus[above[0]])  # fixing more records never helps the knapsack part
    for c in reversed(above[1:]):
        pruned = cuts[c]
        if pruned.outcome == "pruned" and pruned.scaled is not None and min(ceiling + int(bonus[c]),
                                                                            pruned.scaled) > runner.scaled:
            cuts[c] = solve(c)
        cut = cuts[c]
        if cut.outcome == "solved" and cut.scaled is not None and cut.scaled > runner.scaled:
            runner = cut
    return runner


def flag_dp(problem: CacheProblem, scaled: Scaled | None = None) -> int | None:
    """The optimum's scaled objective by a dense DP over capacity with one intact/broken flag;
    None when the table would exceed FLAG_DP_CELLS. Independent of the cuts and the reductions.

    Previous records are processed first, in the previous order, then the others. While the
    prefix is intact the state is one point (its tokens and value are fixed); breaking at
    previous record i adds ``bonus[i]`` and lets that record take any other level or none."""
    inst = problem.instance
    scaled = scaled or scale(inst)
    bonus = _bonus_scaled(problem, scaled)
    count = inst.max_records
    shape = (inst.budget + 1,) if count is None else (inst.budget + 1, count + 1)
    if inst.n * int(np.prod(shape)) > FLAG_DP_CELLS:
        return None
    broken = np.full(shape, _NEG, dtype=np.int64)
    usable = scaled.usable

    def take(table: np.ndarray, row: int, skip: int = -1) -> np.ndarray:
        """Row ``row`` decided after ``table``: delete, or any usable level but ``skip``. Cells
        no allocation reaches stay below _NEG / 2 (values add at most 2**52)."""
        out = table.copy()  # delete
        for j in np.flatnonzero(usable[row]).tolist():
            size = int(inst.tokens[row, j])
            if j == skip or size > inst.budget:
                continue
            cand = np.full(shape, _NEG, dtype=np.int64)
            if count is None:
                cand[size:] = table[: inst.budget + 1 - size] + scaled.values[row, j]
            else:
                cand[size:, 1:] = table[: inst.budget + 1 - size, :-1] + scaled.values[row, j]
            np.maximum(out, cand, out=out)
        return out

    def point(tokens: int, kept: int, value: int) -> np.ndarray:
        table = np.full(shape, _NEG, dtype=np.int64)
        if tokens <= inst.budget and (count is None or kept <= count):
            table[(tokens,) if count is None else (tokens, kept)] = value
        return table

    seen = np.zeros(inst.n, dtype=bool)
    tokens, value, alive = 0, 0, True
    for i in range(problem.m):
        row, level = int(problem.rows[i]), int(problem.levels[i])
        here = point(tokens, i, value + int(bonus[i])) if alive else None
        if row >= 0:
            seen[row] = True
            broken = take(broken, row)
            if here is not None:
                np.maximum(broken, take(here, row, skip=level), out=broken)
        elif here is not None:
            np.maximum(broken, here, out=broken)
        if alive and row >= 0 and level >= 0:
            tokens += int(inst.tokens[row, level])
            value += int(scaled.values[row, level])
        else:
            alive = False
    if alive:
        np.maximum(broken, point(tokens, problem.m, value + int(bonus[problem.m])), out=broken)
    for row in np.flatnonzero(~seen).tolist():
        broken = take(broken, row)
    best = int(broken.max())
    assert best > _NEG // 2, "deleting everything is always feasible"
    return best


def solve_cpsat_cache(problem: CacheProblem, scaled: Scaled | None = None, *, time_limit_s: float = 10.0
                      ) -> tuple[int | None, str]:
    """The optimum's scaled objective by CP-SAT with one Boolean per cut point (exactly one cut;
    a cut c fixes the first c previous records at their levels); (objective, status)."""
    from ortools.sat.python import cp_model  # imported on use

    inst = problem.instance
    scaled = scaled or scale(inst)
    bonus = _bonus_scaled(problem, scaled)
    model = cp_model.CpModel()
    forced = {int(r): int(j) for r, j in zip(problem.rows.tolist(), problem.levels.tolist(), strict=True)
              if r >= 0 and j >= 0}
    x: dict[tuple[int, int], object] = {}
    capacity, records, objective = [], [], []
    for row in range(inst.n):
        options = [j for j in range(inst.k) if (scaled.usable[row, j] or forced.get(row) == j)
                   and inst.mask[row, j] and inst.tokens[row, j] <= inst.budget]
        if not options:
            continue
        row_vars = []
        for j in options:
            var = x[row, j] = model.NewBoolVar(f"x{row}_{j}")
            row_vars.append(var)
            capacity.append(int(inst.tokens[row, j]) * var)
            objective.append(int(scaled.values[row, j]) * var)
        model.Add(sum(row_vars) <= 1)
        records.append(sum(row_vars))
    top = problem.keepable()
    z = [model.NewBoolVar(f"cut{c}") for c in range(top + 1)]
    model.AddExactlyOne(z)
    for i in range(top):
        key = (int(problem.rows[i]), int(problem.levels[i]))
        if key in x:
            model.Add(x[key] >= sum(z[i + 1:]))
        else:
            model.Add(sum(z[i + 1:]) == 0)
    objective.extend(int(bonus[c]) * z[c] for c in range(top + 1))
    model.Add(sum(capacity) <= inst.budget)
    if inst.max_records is not None:
        model.Add(sum(records) <= inst.max_records)
    model.Maximize(sum(objective))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 0
    solver.parameters.max_time_in_seconds = float(time_limit_s)
    status = solver.Solve(model)
    if status == cp_model.OPTIMAL:
        return int(round(solver.ObjectiveValue())), OPTIMAL
    if status == cp_model.FEASIBLE:
        return int(round(solver.ObjectiveValue())), TIME_LIMIT
    return None, SKIPPED


def cross_check(problem: CacheProblem, found: CacheSolution, engine: str, *, time_limit_s: float = 10.0
                ) -> engines.CrossCheck | None:
    """Check the cuts' optimum with an independent exact method (``dp``: the flag DP; ``cp-sat``);
    a proven disagreement is a SolverError, as in DESIGN §5."""
    if engine == "none":
        return None
    scaled = scale(problem.instance)
    if engine == "dp":
        value, status = flag_dp(problem, scaled), OPTIMAL
        if value is None:
            return engines.CrossCheck("dp", None, None, "the flag DP's table is too large; not checked")
    else:
        value, status = solve_cpsat_cache(problem, scaled, time_limit_s=time_limit_s)
        if value is None:
            return engines.CrossCheck("cp-sat", None, None, "CP-SAT found no allocation in time")
    mine = found.solution.scaled_objective
    assert mine is not None
    proven = status == OPTIMAL and found.solution.status == OPTIMAL
    agrees = value == mine if proven else (mine >= value if found.solution.status == OPTIMAL else None)
    if agrees is False:
        raise SolverError(f"cache objective: the cuts found {mine} (scaled), the {engine} cross-check {value}")
    return engines.CrossCheck(engine, value / scaled.scale + problem.constant, agrees,
                              "" if status == OPTIMAL else f"{engine}: {status}")
