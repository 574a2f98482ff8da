"""The engines behind one small interface, a registry of them, and the cross-check.

An :class:`Engine` solves a :class:`Job` (one instance, its scaled values, and the reduction
and compiled-kernel answer the engines share). ``dp`` and ``cp-sat`` are exact and prove their
optimum; ``greedy`` is the baseline. The ``dp`` engine runs the compiled kernel where it is
built (:mod:`.native`) and the numpy reductions and core DP elsewhere: the same tie-rule
allocation either way.

When the DP runs (as engine or as cross-check) its tie-rule allocation is the one reported,
so that every exact engine gives byte-identical results; the other engine must reach the
same scaled objective, or the solve fails with SolverError (exit 3). The outcome names both the
engine whose optimum was asked for and the engine whose allocation is reported.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

import numpy as np

from ..errors import InputError, SolverError, shown
from .core import (
    TIES_BY_SEARCH,
    every_optimum_fills_the_budget,
    reduce_instance,
    solve_cpsat_reduced,
    solve_kernel_reduced,
    solve_reduced,
)
from .dp import solve_dp
from .greedy import solve_greedy
from .instance import FAILED, OPTIMAL, SKIPPED, Instance, Scaled, Solution, check_feasible, scale
from .kernel import applies as kernel_applies
from .kernel import one_call_applies, solve_job
from .reduce import Reduction

# The cross-check runs the dense DP (no reductions: independent of them) up to this many
# table cells, and the reduced DP beyond.
DENSE_CROSS_CHECK_CELLS = 20_000_000


@dataclass(frozen=True)
class CrossCheck:
    """The cross-checking engine's objective and whether it agrees with the primary's."""

    engine: str
    objective: float | None
    agrees: bool | None
    detail: str = ""


@dataclass(frozen=True)
class Outcome:
    """The allocation to report, the engine asked for, the cross-check and the greedy baseline."""

    solution: Solution  # solution.engine: the engine whose allocation this is
    engine: str  # the engine asked for, whose optimum the run proved
    cross_check: CrossCheck | None
    baseline: Solution | Job | None  # the greedy baseline, or the job that runs it when first read
    reduction: Reduction | None = None  # which rows were fixed by bound and which searched

    @property
    def greedy(self) -> Solution | None:
        """The greedy baseline, to show what it would lose (a turn that never reads it never runs it)."""
        return self.baseline.greedy if isinstance(self.baseline, Job) else self.baseline


class Job:
    """One instance being solved: the scaled values, the reduction and the kernel's answer, each
    computed once and shared by every engine that runs on it.

    Where the compiled kernel takes the instance as it is (:func:`.kernel.one_call_applies`), the
    scaling, the kernel's solve and the allocation's worth are one call (:func:`.kernel.solve_job`;
    the same integers, allocation and floats as the separate steps, tests/solver/test_one_call.py).
    """

    one_call = True  # tests switch it off to compare the two paths

    def __init__(self, instance: Instance, time_limit_s: float = 10.0, scores: np.ndarray | None = None) -> None:
        self.instance = instance
        self._scaled: Scaled | None = None
        self.time_limit_s = time_limit_s
        self.scores = scores  # the greedy ranking (relevance), when there is one
        self.reduction: Reduction | None = None
        self._greedy: Solution | None = None
        self._kernel: tuple[Solution, Reduction] | None = None
        self._kernel_ran = False

    @property
    def scaled(self) -> Scaled:
        """The instance's integer form (:func:`.instance.scale`), computed once."""
        if self._scaled is None:
            self._scaled = scale(self.instance)
        return self._scaled

    def kernel(self) -> tuple[Solution, Reduction] | None:
        """The compiled kernel's solution and reduction (once), when it applies and finishes."""
        if not self._kernel_ran:
            self._kernel_ran = True
            if kernel_applies(self.instance):
                # massive ties: the dense DP orders them faster when its table is small
                dense_ok = dense_cells(self.instance) <= DENSE_CROSS_CHECK_CELLS
                free = None
                if self._scaled is None and self.one_call and one_call_applies(self.instance):
                    self._scaled, result, worth = solve_job(self.instance, bounded_ties=not dense_ok)
                    if result is None:  # past the kernel's state limit: the numpy path answers
                        return None
                    free = (result, worth)
                self._kernel = solve_kernel_reduced(self.instance, self.scaled, bounded_ties=not dense_ok, free=free)
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

    def shared_reduction(self) -> Reduction:
        """The kernel's reduction, or the numpy one (computed once)."""
        if self.reduction is None:
            found = self.kernel()
            self.reduction = found[1] if found else reduce_instance(self.instance, self.scaled, self.incumbent())
        return self.reduction

    def incumbent(self) -> np.ndarray | None:
        # the LP floor may break a count limit; only then is the greedy allocation needed
        return None if self.instance.max_records is None else self.greedy.choice


class Engine:
    """One way to solve a job. ``exact``: it proves its optimum (status ``optimal``);
    ``solve(job, checking)``, ``checking``: the engine runs as the independent cross-check."""

    __slots__ = ("name", "exact", "solve")

    def __init__(self, name: str, exact: bool, solve: Callable[[Job, bool], Solution]) -> None:
        self.name, self.exact, self.solve = name, exact, solve

    def __repr__(self) -> str:
        return f"Engine({self.name!r})"


def _dp(job: Job, checking: bool) -> Solution:
    if checking and dense_cells(job.instance) <= DENSE_CROSS_CHECK_CELLS:
        return solve_dp(job.instance, job.scaled)  # no reductions: independent of them
    found = job.kernel()
    if found is None:
        found = solve_reduced(job.instance, job.scaled, job.incumbent())
    solution, job.reduction = found
    return solution


def _cpsat(job: Job, checking: bool) -> Solution:
    return solve_cpsat_reduced(job.instance, job.scaled, job.shared_reduction(), time_limit_s=job.time_limit_s)


def _greedy(job: Job, checking: bool) -> Solution:
    return job.greedy


ENGINES: Mapping[str, Engine] = {
    engine.name: engine
    for engine in (Engine("cp-sat", True, _cpsat), Engine("dp", True, _dp), Engine("greedy", False, _greedy))
}
CROSS_CHECKS = ("dp", "cp-sat", "none")


def engine_named(name: str) -> Engine:
    """The registered engine; InputError naming the choices for any other name."""
    try:
        return ENGINES[name]
    except KeyError:
        raise InputError(f"unknown engine `{shown(name)}`; expected one of {', '.join(ENGINES)}") from None


def dense_cells(instance: Instance) -> int:
    count = 1 if instance.max_records is None else instance.max_records + 1
    return instance.n * (instance.budget + 1) * count


def _run_engine(job: Job, name: str | None, checking: bool = False) -> Solution | None:
    if name is None or name == "none":
        return None
    solution = engine_named(name).solve(job, checking)
    if solution.status == FAILED:
        raise SolverError(f"{solution.engine} failed: {solution.detail}")
    return solution


def solve(job: Job, engine: str) -> Solution:
    """The ``solve`` stage: the asked-for engine's answer (CP-SAT takes a core the DP declines)."""
    primary = _run_engine(job, engine)
    assert primary is not None
    if primary.status == SKIPPED:
        primary = _run_engine(job, "cp-sat")
        assert primary is not None
    return primary


def check(job: Job, primary: Solution, cross_check: str, *, compare_greedy: bool = True) -> Outcome:
    """The ``check`` stage: cross-check ``primary`` with an independent exact engine, verify the
    hard constraints, and pick the allocation to report (the DP's tie-rule one when proven)."""
    if primary.engine == "greedy":
        # greedy is a baseline: the exact optimum is reported beside it, never enforced
        reference = _run_engine(job, cross_check, checking=True)
        verdict = None
        if reference is not None:
            proven = reference.status == OPTIMAL
            verdict = CrossCheck(
                reference.engine,
                reference.objective if proven else None,
                reference.scaled_objective == primary.scaled_objective if proven else None,
                "greedy is a baseline; the exact optimum is shown for comparison",
            )
        return Outcome(_feasible(job.instance, primary), primary.engine, verdict, primary)

    greedy = job if compare_greedy else None
    other = None if cross_check == primary.engine else cross_check
    secondary = _run_engine(job, other, checking=True)
    if secondary is None:
        return Outcome(_feasible(job.instance, _reported(job, primary)), primary.engine, None, greedy, job.reduction)
    if secondary.status == SKIPPED:
        verdict = CrossCheck(secondary.engine, None, None, secondary.detail)
        return Outcome(_feasible(job.instance, _reported(job, primary)), primary.engine, verdict, greedy,
                       job.reduction)

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
            chosen, asked = replace(secondary, bound=primary.bound, detail=primary.detail), primary.engine
            verdict = CrossCheck(secondary.engine, secondary.objective, True, secondary.detail)
        else:  # CP-SAT ran out of time; the DP's proof stands
            chosen, asked = secondary, secondary.engine
            verdict = CrossCheck(primary.engine, primary.objective, True, primary.detail)
    else:
        chosen, asked = _reported(job, primary), primary.engine
        verdict = CrossCheck(secondary.engine, secondary.objective, True, secondary.detail)
    return Outcome(_feasible(job.instance, chosen), asked, verdict, greedy, job.reduction)


def _reported(job: Job, solution: Solution) -> Solution:
    """The solution whose allocation the result reports. A proven CP-SAT optimum reported as it
    is (no proven DP allocation beside it) is first made the one with the fewest tokens, the tie
    rule's first step: CP-SAT again, with that value kept and the tokens minimized. Only here,
    where its allocation is the one shown (beside a proven DP the second solve would be lost)."""
    if solution.engine != "cp-sat" or solution.status != OPTIMAL:
        return solution
    if _every_optimum_fills_the_budget(job, solution):
        return solution
    fewest = solve_cpsat_reduced(job.instance, job.scaled, job.shared_reduction(), time_limit_s=job.time_limit_s,
                                 fewest_tokens=True)
    if fewest.status != OPTIMAL or fewest.scaled_objective != solution.scaled_objective:
        return replace(solution, detail="fewest tokens among the optima not proven in time")
    return replace(fewest, bound=solution.bound)


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
    engine_named(engine)
    job = Job(instance, time_limit_s, scores)
    return check(job, solve(job, engine), cross_check, compare_greedy=compare_greedy)


def _feasible(instance: Instance, solution: Solution) -> Solution:
    """The solution, once its hard constraints are verified (a violation is an engine bug)."""
    try:
        check_feasible(instance, solution.choice)
    except AssertionError as exc:
        raise SolverError(f"{solution.engine} returned an infeasible allocation: {exc}") from None
    return solution


def _every_optimum_fills_the_budget(job: Job, solution: Solution) -> bool:
    """Whether the optimum's own tokens are the fewest of any optimum's (core.every_optimum_fills_the_budget)."""
    if solution.scaled_objective is None:
        return False
    return every_optimum_fills_the_budget(job.shared_reduction(), solution.scaled_objective, solution.tokens_used,
                                          job.instance.budget)
