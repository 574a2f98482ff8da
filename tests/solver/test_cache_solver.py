"""The cache objective's exact solver (DESIGN §15) against exhaustive search, the flag DP and CP-SAT.

The exhaustive oracle knows nothing of cuts: it builds each allocation's prompt (the records kept
as they were first, in the previous order, then the others), measures how many records of the
previous prompt it repeats at its head, and scores it."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memsolve.errors import SolverError
from memsolve.solver.cache import CacheProblem, cross_check, flag_dp, solve_cpsat_cache, solve_cuts
from memsolve.solver.instance import scale

from .helpers import feasible_choices, instances


@st.composite
def problems(draw, max_n: int = 5, max_k: int = 2):
    inst = draw(instances(max_n=max_n, max_k=max_k))
    if draw(st.booleans()):  # room for the previous prompt and more: the prefix is worth keeping
        inst = replace(inst, budget=int(inst.tokens.sum()) // 2 + draw(st.integers(0, 12)), max_records=None)
    rows = draw(st.permutations(list(range(inst.n))))
    m = draw(st.integers(0, inst.n + 1))
    prev_rows, prev_levels = [], []
    for i in range(m):
        if i < len(rows) and draw(st.integers(0, 5)) > 0:
            row = rows[i]
            offered = [j for j in range(inst.k) if inst.mask[row, j]]
            level = draw(st.sampled_from(offered)) if offered and draw(st.integers(0, 5)) > 0 else -1
        else:
            row, level = -1, -1  # a previous record that is gone (not eligible now)
        prev_rows.append(row)
        prev_levels.append(level)
    steps = draw(st.lists(st.sampled_from([0.0, 0.0, 1.0, 2.5, 20.0, 60.0, 200.0]), min_size=m + 1, max_size=m + 1))
    constant = draw(st.sampled_from([0.0, -3.0]))
    return CacheProblem(inst, np.array(prev_rows, dtype=np.int64), np.array(prev_levels, dtype=np.int64),
                        np.cumsum(steps), constant)


def prompt_head(problem: CacheProblem, choice: tuple[int, ...]) -> int:
    """Records of the previous prompt this allocation's prompt repeats at its head."""
    previous = [(int(r), int(j)) for r, j in zip(problem.rows, problem.levels, strict=True)]
    kept = [(r, j) for r, j in previous if r >= 0 and j >= 0 and choice[r] == j]
    prompt = kept + sorted((row, level) for row, level in enumerate(choice) if level >= 0 and (row, level) not in kept)
    head = 0
    while head < min(len(previous), len(prompt)) and previous[head] == prompt[head] and previous[head][1] >= 0:
        head += 1
    return head


def exhaustive(problem: CacheProblem) -> int:
    """The best scaled objective over every feasible allocation."""
    scaled = scale(problem.instance)
    bonus = np.rint(problem.bonus * scaled.scale).astype(np.int64)
    best = None
    for choice in feasible_choices(problem.instance):
        value = sum(int(scaled.values[r, j]) for r, j in enumerate(choice) if j >= 0)
        value += int(bonus[prompt_head(problem, choice)])
        best = value if best is None else max(best, value)
    assert best is not None
    return best


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_cuts_and_flag_dp_match_exhaustive_search(problem):
    expected = exhaustive(problem)
    found = solve_cuts(problem)
    assert found.solution.status == "optimal"
    assert found.solution.scaled_objective == expected
    assert flag_dp(problem) == expected
    # the reported allocation is what it claims: its prompt head, its objective, within the limits
    choice = found.solution.choice
    assert prompt_head(problem, tuple(choice.tolist())) == found.intact
    assert found.solution.objective == pytest.approx(problem.objective(choice), abs=1e-9)
    inst = problem.instance
    kept = choice >= 0
    assert int(inst.tokens[kept.nonzero()[0], choice[kept]].sum()) <= inst.budget
    assert inst.max_records is None or int(kept.sum()) <= inst.max_records
    # the certificate: every cut solved, pruned by a bound no better than the optimum, or infeasible
    assert len(found.cuts) == problem.m + 1
    for cut in found.cuts:
        if cut.outcome == "pruned":
            assert cut.scaled is not None and cut.scaled <= expected
        if cut.outcome == "solved":
            assert cut.scaled is not None and cut.scaled <= expected


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems(max_n=14, max_k=2))
def test_cuts_match_the_flag_dp_on_longer_previous_prompts(problem):
    # beyond exhaustive search: the bisection and its bounds over up to 15 cut points
    found = solve_cuts(problem)
    assert found.solution.scaled_objective == flag_dp(problem)
    assert problem.intact(found.solution.choice) == found.intact


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems(max_n=4))
def test_cpsat_model_matches_exhaustive_search(problem):
    value, status = solve_cpsat_cache(problem)
    assert status == "optimal"
    assert value == exhaustive(problem)
    verdict = cross_check(problem, solve_cuts(problem), "cp-sat")
    assert verdict is not None and verdict.agrees is True


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_without_is_the_best_allocation_that_keeps_the_first_change(problem):
    found = solve_cuts(problem)
    if found.without is None:
        return
    scaled = scale(problem.instance)
    bonus = np.rint(problem.bonus * scaled.scale).astype(np.int64)
    best = None
    for choice in feasible_choices(problem.instance):
        head = prompt_head(problem, choice)
        if head > found.intact:
            value = sum(int(scaled.values[r, j]) for r, j in enumerate(choice) if j >= 0) + int(bonus[head])
            best = value if best is None else max(best, value)
    assert found.without.scaled == best


def test_a_large_bonus_keeps_a_record_the_knapsack_alone_would_drop():
    from memsolve.solver import make_instance

    # row 0 was first in the previous prompt; now row 1 is worth more and only one fits
    inst = make_instance(np.array([[4], [4]]), np.array([[1.0], [3.0]]), 4)
    keep = CacheProblem(inst, np.array([0]), np.array([0]), np.array([0.0, 5.0]))
    found = solve_cuts(keep)
    assert found.solution.choice.tolist() == [0, -1] and found.intact == 1
    assert found.solution.objective == pytest.approx(6.0)
    change = CacheProblem(inst, np.array([0]), np.array([0]), np.array([0.0, 1.0]))
    found = solve_cuts(change)
    assert found.solution.choice.tolist() == [-1, 0] and found.intact == 0
    assert found.without is not None and found.without.objective == pytest.approx(2.0)


def test_a_disagreeing_cross_check_is_a_solver_error():
    from memsolve.solver import make_instance

    inst = make_instance(np.array([[4], [4]]), np.array([[1.0], [3.0]]), 4)
    problem = CacheProblem(inst, np.array([0]), np.array([0]), np.array([0.0, 5.0]))
    found = solve_cuts(problem)
    wrong = replace(found, solution=replace(found.solution, scaled_objective=found.solution.scaled_objective - 1))
    with pytest.raises(SolverError, match="cross-check"):
        cross_check(problem, wrong, "dp")
