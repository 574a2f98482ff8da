"""The optimum, checked by independent means: exhaustive search (small), DP vs CP-SAT (larger)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import memsolve
from memsolve.solver import make_instance, run, scale, solve_arrays
from memsolve.solver.cpsat import solve_cpsat
from memsolve.solver.dp import solve_dp
from memsolve.solver.greedy import solve_greedy

from .helpers import feasible_choices, instances, tie_key


def brute_force(inst) -> float:
    net = inst.net()
    return max(sum(float(net[i, j]) for i, j in enumerate(c) if j >= 0) for c in feasible_choices(inst))


def assert_feasible(inst, choice) -> None:
    rows = np.flatnonzero(choice >= 0)
    assert inst.mask[rows, choice[rows]].all()
    assert int(inst.tokens[rows, choice[rows]].sum()) <= inst.budget
    if inst.max_records is not None:
        assert len(rows) <= inst.max_records


@settings(max_examples=300, deadline=None)
@given(instances())
def test_dp_and_cp_sat_equal_exhaustive_search(inst) -> None:
    best = brute_force(inst)
    scaled = scale(inst)
    tolerance = 1e-6 * (1 + inst.n)  # rounding to 1/S per row
    dp = solve_dp(inst, scaled)
    cp = solve_cpsat(inst, scaled)
    for solution in (dp, cp):
        assert solution.status == "optimal"
        assert_feasible(inst, solution.choice)
        assert solution.objective == pytest.approx(best, abs=tolerance)
    assert dp.scaled_objective == cp.scaled_objective


@settings(max_examples=300, deadline=None)
@given(instances(integral=True))
def test_dp_follows_the_documented_tie_rule(inst) -> None:
    """Max objective, then fewest tokens, then earlier records at higher fidelity."""
    scaled = scale(inst)
    key = tie_key(inst, scaled)
    expected = max((c for c in feasible_choices(inst) if key(c) is not None), key=key)
    assert tuple(solve_dp(inst, scaled).choice.tolist()) == expected


@settings(max_examples=40, deadline=None)
@given(st.integers(20, 60), st.integers(0, 2**32 - 1), st.sampled_from([None, 5, 15]))
def test_dp_equals_cp_sat_on_larger_instances(n: int, seed: int, max_records) -> None:
    rng = np.random.default_rng(seed)
    raw = rng.integers(20, 200, size=n)
    tokens = np.stack([raw, raw // 4 + 1, raw // 12 + 1, raw // 50 + 1], axis=1)
    u = rng.uniform(0, 10, size=n)
    utility = np.stack([u, 0.7 * u, 0.4 * u, 0.15 * u], axis=1) * rng.uniform(0.8, 1.2, size=(n, 4))
    inst = make_instance(tokens, utility, int(raw.sum() // 4), price=0.002, max_records=max_records)
    scaled = scale(inst)
    dp, cp = solve_dp(inst, scaled), solve_cpsat(inst, scaled)
    assert cp.status == "optimal"
    assert dp.scaled_objective == cp.scaled_objective


def test_strongly_correlated_instances_agree() -> None:
    """Pisinger's strongly correlated class (utility = weight + constant): hard for bounds."""
    rng = np.random.default_rng(7)
    for _ in range(10):
        tokens = rng.integers(1, 100, size=(40, 3))
        utility = tokens + 10.0
        inst = make_instance(tokens, utility, int(tokens[:, 0].sum() // 3))
        scaled = scale(inst)
        assert solve_dp(inst, scaled).scaled_objective == solve_cpsat(inst, scaled).scaled_objective


def test_greedy_is_suboptimal_on_a_crafted_instance() -> None:
    # greedy by value takes the 10-token record first and then nothing else fits
    inst = make_instance([[10], [6], [4]], [[10.0], [7.0], [6.0]], 10)
    greedy = solve_greedy(inst)
    exact = solve_dp(inst)
    assert greedy.objective == 10.0 and exact.objective == 13.0
    assert exact.choice.tolist() == [-1, 0, 0]


def test_high_price_forces_deletion() -> None:
    inst = make_instance([[10, 2]], [[5.0, 1.0]], 10, price=1.0)  # net values -5 and -1
    assert solve_dp(inst).choice.tolist() == [-1]
    assert solve_cpsat(inst).choice.tolist() == [-1]
    cheaper = make_instance([[10, 2]], [[5.0, 1.0]], 10, price=0.3)  # net 2.0 and 0.4
    assert solve_dp(cheaper).choice.tolist() == [0]


def test_price_makes_lower_fidelity_win() -> None:
    inst = make_instance([[100, 10]], [[10.0, 8.0]], 100, price=0.05)  # net 5.0 vs 7.5
    assert solve_dp(inst).choice.tolist() == [1]


def test_count_limit() -> None:
    inst = make_instance([[1], [1], [1]], [[3.0], [2.0], [1.0]], 10, max_records=2)
    assert solve_dp(inst).choice.tolist() == [0, 0, -1]
    assert solve_cpsat(inst).objective == 5.0


def test_tie_prefers_fewer_tokens_then_earlier_records_at_higher_fidelity() -> None:
    same = make_instance([[2, 1], [2, 1]], [[4.0, 4.0], [4.0, 4.0]], 4)
    assert solve_dp(same).choice.tolist() == [1, 1]  # same value, fewer tokens
    twins = make_instance([[2, 1], [2, 1]], [[5.0, 4.0], [5.0, 4.0]], 3)
    assert solve_dp(twins).choice.tolist() == [0, 1]  # the earlier record keeps more detail


def test_large_utilities_scale_without_overflow() -> None:
    n = 1000
    inst = make_instance(np.ones((n, 1), dtype=np.int64), np.full((n, 1), 1e13), n // 2)
    scaled = scale(inst)
    assert scaled.scale < 1.0
    assert solve_dp(inst, scaled).objective == pytest.approx(5e15)
    assert solve_cpsat(inst, scaled).objective == pytest.approx(5e15)


def test_solve_arrays_contract() -> None:
    out = solve_arrays([[4], [2], [1]], [[8.0], [3.0], [100.0]], 6, mask=[[True], [True], [False]])
    assert out.choice.tolist() == [0, 0, -1]
    assert (out.objective, out.tokens_used, out.status, out.bound) == (11.0, 6, "optimal", 11.0)
    assert solve_arrays([[4], [2]], [[8.0], [3.0]], 6, engine="cp-sat").objective == 11.0
    greedy = solve_arrays([[4], [2]], [[8.0], [3.0]], 6, engine="greedy")
    assert greedy.status == "feasible" and greedy.bound is None


@pytest.mark.parametrize(
    "tokens, utility, budget, kw, message",
    [
        ([[1]], [[1.0, 2.0]], 1, {}, "must both be"),
        ([[-1]], [[1.0]], 1, {}, "tokens must be >= 0"),
        ([[1.5]], [[1.0]], 1, {}, "must be integers"),
        ([[1]], [[float("nan")]], 1, {}, "finite"),
        ([[1]], [[1.0]], -1, {}, "budget"),
        ([[1]], [[1.0]], 1, {"price": -1.0}, "price"),
    ],
)
def test_solve_arrays_rejects_bad_input(tokens, utility, budget, kw, message) -> None:
    with pytest.raises(memsolve.InputError, match=message):
        solve_arrays(tokens, utility, budget, **kw)


def test_disagreement_is_a_solver_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from memsolve.solver import engines

    inst = make_instance([[4], [2]], [[8.0], [3.0]], 6)
    real = engines.solve_dp

    def broken(instance, scaled=None):
        good = real(instance, scaled)
        return type(good)(**{**good.__dict__, "scaled_objective": good.scaled_objective - 1})

    monkeypatch.setattr(engines, "solve_dp", broken)
    with pytest.raises(memsolve.SolverError, match="exact engines disagree"):
        run(inst, "cp-sat", "dp")


def test_dp_declines_too_large_and_cp_sat_takes_over(monkeypatch: pytest.MonkeyPatch) -> None:
    from memsolve.solver import core, dp

    monkeypatch.setenv("MEMSOLVE_KERNEL", "numpy")  # the numpy path's limits; the kernel's: test_kernel.py
    monkeypatch.setattr(core, "MAX_STATES", 0)
    monkeypatch.setattr(dp, "MAX_CELLS", 0)
    inst = make_instance([[10], [6], [4]], [[10.0], [7.0], [6.0]], 10)
    outcome = run(inst, "dp", "none")
    assert outcome.reduction is not None and outcome.reduction.core.size > 0
    assert outcome.solution.engine == "cp-sat" and outcome.solution.status == "optimal"
    assert outcome.solution.objective == 13.0


@settings(max_examples=300, deadline=None)
@given(instances(max_n=8, max_k=3))
def test_greedy_never_beats_exact(inst) -> None:
    scaled = scale(inst)
    assert solve_greedy(inst, scaled).scaled_objective <= solve_dp(inst, scaled).scaled_objective


def test_cp_sat_out_of_time_returns_a_feasible_fallback() -> None:
    rng = np.random.default_rng(5)
    tokens = rng.integers(1, 100, size=(300, 4))
    inst = make_instance(tokens, tokens + 10.0, int(tokens[:, 0].sum() // 3), max_records=40)
    fallback = solve_greedy(inst).choice
    result = solve_cpsat(inst, time_limit_s=0.001, fallback=fallback)
    assert result.status in ("time_limit", "optimal")
    rows = np.flatnonzero(result.choice >= 0)
    assert int(inst.tokens[rows, result.choice[rows]].sum()) <= inst.budget and len(rows) <= 40
    if result.status == "time_limit":
        assert result.bound is None or result.bound >= result.objective - 1e-6
