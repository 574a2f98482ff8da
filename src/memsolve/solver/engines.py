"""Run an engine, cross-check it with an independent exact one, and pick the allocation.

When the DP runs (as engine or as cross-check) its tie-rule allocation is the one reported,
so that every exact engine gives byte-identical results; the other engine must reach the
same scaled objective, or the solve fails with SolverError (exit 3).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..errors import InputError, SolverError
from .core import TIES_BY_SEARCH, reduce_instance, solve_cpsat_reduced, solve_kernel_reduced, solve_reduced
from .dp import solve_dp
from .greedy import solve_greedy
from .instance import OPTIMAL, SKIPPED, Instance, Solution, check_feasible, scale
from .kernel import applies as kernel_applies
from .reduce import Reduction

ENGINES = ("cp-sat", "dp", "greedy")


@dataclass(frozen=True)
class CrossCheck:
    engine: str
    objective: float | None
    agrees: bool | None
    detail: str = ""


@dataclass(frozen=True)
class Outcome:
    """The allocation to report, the engine whose answer it is, and the cross-check."""

    solution: Solution
    cross_check: CrossCheck | None
    greedy: Solution | None  # the greedy baseline, to show what it would lose
    reduction: Reduction | None = None  # which rows were fixed by bound and which searched


# The cross-check runs the dense DP (no reductions: independent of them) up to this many
# table cells, and the reduced DP beyond.
DENSE_CROSS_CHECK_CELLS = 20_000_000


class _Runner:
    """Runs engines on one instance, sharing the scaled values and the reduction."""

    def __init__(self, instance: Instance, time_limit_s: float, scores: np.ndarray | None) -> None:
        self.instance = instance
        self.scaled = scale(instance)
        self.time_limit_s = time_limit_s
        self.scores = scores
        self.reduction: Reduction | None = None
        self._greedy: Solution | None = None
        self._kernel: tuple[Solution, Reduction] | None = None
        self._kernel_ran = False

    def kernel(self) -> tuple[Solution, Reduction] | None:
        """The compiled kernel's solution and reduction (once), when it applies and finishes."""
        if not self._kernel_ran:
            self._kernel_ran = True
            if kernel_applies(self.instance):
                # massive ties: the dense DP orders them faster when its table is small
                dense_ok = _dense_cells(self.instance) <= DENSE_CROSS_CHECK_CELLS
                self._kernel = solve_kernel_reduced(self.instance, self.scaled, bounded_ties=not dense_ok)
                if self._kernel is not None and dense_ok and TIES_BY_SEARCH in self._kernel[0].detail:
                    self._kernel = self._order_ties_densely(*self._kernel)
        return self._kernel

    def _order_ties_densely(self, solution: Solution, reduction: Reduction) -> tuple[Solution, Reduction]:
        """Too many tied optima for the kernel's tie-rule DP, and a dense DP table small enough:
        the dense DP orders them all (Pisinger's classes at a few hundred records)."""
        dense = solve_dp(self.instance, self.scaled)
        if dense.status != OPTIMAL or dense.scaled_objective != solution.scaled_objective:
            raise SolverError(f"the kernel ({solution.objective!r}) and the dense DP ({dense.objective!r}) disagree")
        detail = solution.detail.replace(TIES_BY_SEARCH, "ties ordered by the dense DP")
        return replace(dense, bound=dense.objective, detail=detail), reduction

    @property
    def greedy(self) -> Solution:
        if self._greedy is None:
            self._greedy = solve_greedy(self.instance, self.scaled, scores=self.scores)
        return self._greedy

    def _greedy_incumbent(self) -> np.ndarray | None:
        # the LP floor may break a count limit; only then is the greedy allocation needed
        return None if self.instance.max_records is None else self.greedy.choice

    def solve(self, engine: str | None, checking: bool = False) -> Solution | None:
        if engine is None or engine == "none":
            return None
        if engine == "dp":
            if checking and _dense_cells(self.instance) <= DENSE_CROSS_CHECK_CELLS:
                return solve_dp(self.instance, self.scaled)
            found = self.kernel()
            if found is None:
                found = solve_reduced(self.instance, self.scaled, self._greedy_incumbent())
            solution, self.reduction = found
            return solution
        if engine == "cp-sat":
            if self.reduction is None:
                found = self.kernel()
                self.reduction = (
                    found[1] if found else reduce_instance(self.instance, self.scaled, self._greedy_incumbent())
                )
            try:
                return solve_cpsat_reduced(
                    self.instance, self.scaled, self.reduction, time_limit_s=self.time_limit_s
                )
            except RuntimeError as exc:
                raise SolverError(str(exc)) from None
        raise InputError(f"unknown engine `{engine}`; expected one of {', '.join(ENGINES)}")


def _dense_cells(instance: Instance) -> int:
    count = 1 if instance.max_records is None else instance.max_records + 1
    return instance.n * (instance.budget + 1) * count




def run(
    instance: Instance,
    engine: str = "cp-sat",
    cross_check: str = "dp",
    *,
    time_limit_s: float = 10.0,
    scores: np.ndarray | None = None,
    compare_greedy: bool = True,
) -> Outcome:
    """Solve with ``engine`` and check it with ``cross_check`` (``none`` to skip).

    ``compare_greedy`` also runs the greedy baseline so the result can say what it would lose.
    """
    if engine not in ENGINES:
        raise InputError(f"unknown engine `{engine}`; expected one of {', '.join(ENGINES)}")
    runner = _Runner(instance, time_limit_s, scores)
    if engine == "greedy":
        greedy = runner.greedy
        # greedy is a baseline: the exact optimum is reported beside it, never enforced
        reference = runner.solve(cross_check, checking=True)
        check = None
        if reference is not None:
            proven = reference.status == OPTIMAL
            check = CrossCheck(
                reference.engine,
                reference.objective if proven else None,
                reference.scaled_objective == greedy.scaled_objective if proven else None,
                "greedy is a baseline; the exact optimum is shown for comparison",
            )
        return Outcome(_feasible(instance, greedy), check, greedy)

    primary = runner.solve(engine)
    assert primary is not None
    greedy = runner.greedy if compare_greedy else None
    if primary.status == SKIPPED:  # the DP declined a core this large: CP-SAT takes over
        primary = runner.solve("cp-sat")
        assert primary is not None
    other = None if cross_check == primary.engine else cross_check
    secondary = runner.solve(other, checking=True)
    if secondary is None:
        return Outcome(_feasible(instance, primary), None, greedy, runner.reduction)
    if secondary.status == SKIPPED:
        check = CrossCheck(secondary.engine, None, None, secondary.detail)
        return Outcome(_feasible(instance, primary), check, greedy, runner.reduction)

    p, s = primary.scaled_objective, secondary.scaled_objective
    assert p is not None and s is not None
    # a proven optimum is never beaten, and two proven optima are equal
    if primary.status == OPTIMAL and secondary.status == OPTIMAL:
        agrees = p == s
    else:
        agrees = p >= s if primary.status == OPTIMAL else s >= p
    if not agrees:
        raise SolverError(
            f"exact engines disagree: {primary.engine} found {primary.objective!r} "
            f"({primary.status}), {secondary.engine} found {secondary.objective!r} ({secondary.status})"
        )
    # report the DP's allocation when it is proven: it is the documented tie-rule representative
    if secondary.engine == "dp" and secondary.status == OPTIMAL:
        if primary.status == OPTIMAL:
            chosen = replace(secondary, engine=primary.engine, bound=primary.bound, detail=primary.detail)
            check = CrossCheck(secondary.engine, secondary.objective, True, secondary.detail)
        else:  # CP-SAT ran out of time; the DP's proof stands
            chosen = secondary
            check = CrossCheck(primary.engine, primary.objective, True, primary.detail)
    else:
        chosen, check = primary, CrossCheck(secondary.engine, secondary.objective, True, secondary.detail)
    return Outcome(_feasible(instance, chosen), check, greedy, runner.reduction)


def _feasible(instance: Instance, solution: Solution) -> Solution:
    """The solution, once its hard constraints are verified (a violation is an engine bug)."""
    try:
        check_feasible(instance, solution.choice)
    except AssertionError as exc:
        raise SolverError(f"{solution.engine} returned an infeasible allocation: {exc}") from None
    return solution
