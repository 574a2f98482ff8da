"""Run an engine, cross-check it with an independent exact one, and pick the allocation.

When the DP runs (as engine or as cross-check) its tie-rule allocation is the one reported,
so that every exact engine gives byte-identical results; the other engine must reach the
same scaled objective, or the solve fails with SolverError (exit 3).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..errors import InputError, SolverError
from .cpsat import solve_cpsat
from .dp import solve_dp
from .greedy import solve_greedy
from .instance import OPTIMAL, SKIPPED, Instance, Scaled, Solution, check_feasible, scale

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


def run(
    instance: Instance,
    engine: str = "cp-sat",
    cross_check: str = "dp",
    *,
    time_limit_s: float = 10.0,
    scores: np.ndarray | None = None,
) -> Outcome:
    """Solve with ``engine`` and check it with ``cross_check`` (``none`` to skip)."""
    if engine not in ENGINES:
        raise InputError(f"unknown engine `{engine}`; expected one of {', '.join(ENGINES)}")
    scaled = scale(instance)
    greedy = solve_greedy(instance, scaled, scores=scores)
    if engine == "greedy":
        # greedy is a baseline: the exact optimum is reported beside it, never enforced
        reference = _exact(instance, scaled, cross_check, time_limit_s, greedy)
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

    primary = _exact(instance, scaled, engine, time_limit_s, greedy)
    assert primary is not None
    if primary.status == SKIPPED:  # the DP declined a table this large: CP-SAT takes over
        primary = _exact(instance, scaled, "cp-sat", time_limit_s, greedy)
        assert primary is not None
    other = None if cross_check == primary.engine else cross_check
    secondary = _exact(instance, scaled, other, time_limit_s, greedy)
    if secondary is None:
        return Outcome(_feasible(instance, primary), None, greedy)
    if secondary.status == SKIPPED:
        return Outcome(_feasible(instance, primary), CrossCheck(secondary.engine, None, None, secondary.detail), greedy)

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
            chosen = replace(secondary, engine=primary.engine, bound=primary.bound)
            check = CrossCheck(secondary.engine, secondary.objective, True)
        else:  # CP-SAT ran out of time; the DP's proof stands
            chosen = secondary
            check = CrossCheck(primary.engine, primary.objective, True, primary.detail)
    else:
        chosen, check = primary, CrossCheck(secondary.engine, secondary.objective, True, secondary.detail)
    return Outcome(_feasible(instance, chosen), check, greedy)


def _exact(
    instance: Instance, scaled: Scaled, engine: str | None, time_limit_s: float, greedy: Solution
) -> Solution | None:
    if engine is None or engine == "none":
        return None
    if engine == "dp":
        return solve_dp(instance, scaled)
    if engine == "cp-sat":
        try:
            return solve_cpsat(instance, scaled, time_limit_s=time_limit_s, hint=greedy.choice)
        except RuntimeError as exc:
            raise SolverError(str(exc)) from None
    raise InputError(f"unknown engine `{engine}`; expected one of {', '.join(ENGINES)}")


def _feasible(instance: Instance, solution: Solution) -> Solution:
    """The solution, once its hard constraints are verified (a violation is an engine bug)."""
    try:
        check_feasible(instance, solution.choice)
    except AssertionError as exc:
        raise SolverError(f"{solution.engine} returned an infeasible allocation: {exc}") from None
    return solution
