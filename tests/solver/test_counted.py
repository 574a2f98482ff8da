"""A binding count limit solved by the counted sparse DP (core.pareto_dp_counted) on the core of the
(λ, μ) reduction: the tie-rule optimum by exhaustive search, the same allocation as the kernel's
prices where those answer, and CP-SAT's optimum on the generated classes."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memsolve.solver import core, kernel, make_instance, native, run, scale
from memsolve.solver.core import _fill, _levels, _solve_counted, pareto_dp_counted, pareto_dp_counted_numpy
from memsolve.solver.cpsat import solve_cpsat
from memsolve.solver.dp import solve_dp
from memsolve.solver.instance import scaled_value
from memsolve.solver.kernel import solve_kernel_counted
from memsolve.solver.reduce import fix, relax

from ..conftest import needs
from .helpers import feasible_choices, generated, instances, tie_key


def _limited(inst, data):
    if inst.max_records is None:
        inst = replace(inst, max_records=data.draw(st.integers(0, max(inst.n, 1))))
    return inst


def _best(inst, scaled) -> tuple[int, ...]:
    key = tie_key(inst, scaled)
    return max((c for c in feasible_choices(inst) if key(c) is not None), key=key)


# the compiled kernel's counted DP (where built) and the numpy one
COUNTED_DPS = [pytest.param(pareto_dp_counted, id="dispatch"), pytest.param(pareto_dp_counted_numpy, id="numpy")]


@pytest.mark.parametrize("counted_dp", COUNTED_DPS)
@settings(max_examples=300, deadline=None)
@given(instances(max_n=6, max_k=3, integral=True), st.data())
def test_counted_dp_is_the_tie_rule_optimum(counted_dp, inst, data) -> None:
    inst = _limited(inst, data)
    scaled = scale(inst)
    best = _best(inst, scaled)
    every = np.ones(inst.n, dtype=bool)
    assert tuple(counted_dp(inst, scaled, every, 0.0, 0.0, 0).tolist()) == best
    # any λ, μ >= 0 bound every allocation: pruning below the optimum's own value loses nothing
    # (in scaled value: up to a few utility units a token or a record, where the pruning bites)
    lam = data.draw(st.floats(0, 4)) * scaled.scale
    mu = data.draw(st.floats(0, 10)) * scaled.scale
    floor = scaled_value(scaled, np.array(best, dtype=np.int64))
    assert tuple(counted_dp(inst, scaled, every, lam, mu, floor).tolist()) == best
    # no allocation is worth more than the optimum, so none reaches a floor above its bound (the
    # empty suffix of no rows is not pruned)
    assert inst.n == 0 or counted_dp(inst, scaled, every, 0.0, 0.0, floor + 10**6) is None


@pytest.mark.parametrize("counted_dp", COUNTED_DPS)
def test_counted_dp_keeps_a_lighter_state_that_needs_more_records(counted_dp) -> None:
    """Rows 2 and 3 (2 tokens, 2 records) are worth what row 1 is (5 tokens, 1 record): neither state
    dominates the other, and the optimum with the fewest tokens needs the first."""
    inst = make_instance([[2], [5], [1], [1]], [[10.0], [5.0], [2.0], [3.0]], 7, max_records=3)
    scaled = scale(inst)
    every = np.ones(4, dtype=bool)
    assert counted_dp(inst, scaled, every, 0.0, 0.0, 0).tolist() == [0, -1, 0, 0] == list(_best(inst, scaled))


@pytest.mark.parametrize("counted_dp", COUNTED_DPS)
def test_counted_dp_lets_no_heavier_state_with_fewer_records_beat_a_lighter_one(counted_dp) -> None:
    """Found by a random search against a dominance across counts that forgot the tokens: with the
    bound pruning the states of a record fewer, the last state at or below (count - 1, tokens) is one
    of two records fewer and heavier, which must not remove the lighter state."""
    inst = make_instance([[2, 3], [0, 1], [5, 0]], [[9.0, 5.0], [7.0, 7.0], [11.0, 3.0]], 6, max_records=3)
    scaled = scale(inst)
    best = _best(inst, scaled)
    floor = scaled_value(scaled, np.array(best, dtype=np.int64))
    got = counted_dp(inst, scaled, np.ones(3, dtype=bool), 1.0, 2 * scaled.scale, floor)
    assert got.tolist() == [0, 0, 1] == list(best)


@pytest.mark.parametrize("counted_dp", COUNTED_DPS)
def test_counted_dp_reconstruction_keeps_to_the_limit(counted_dp) -> None:
    """Row 0 at its level leaves a suffix worth the rest only with a record the limit no longer
    allows: the tie rule's preference for keeping row 0 must give way."""
    inst = make_instance([[1], [2], [1]], [[1.0], [2.0], [1.0]], 2, max_records=1)
    scaled = scale(inst)
    every = np.ones(3, dtype=bool)
    assert counted_dp(inst, scaled, every, 0.0, 0.0, 0).tolist() == [-1, 0, -1] == list(_best(inst, scaled))


@pytest.mark.parametrize("counted_dp", COUNTED_DPS)
def test_counted_dp_past_its_state_limits_declines(counted_dp, monkeypatch) -> None:
    inst = generated("weakly", 12, 1, max_records=6)
    scaled = scale(inst)
    every = np.ones(inst.n, dtype=bool)
    assert counted_dp(inst, scaled, every, 0.0, 0.0, 0) is not None
    for limit, size in (("MAX_STATES", 3), ("MAX_WORK", 40)):
        with monkeypatch.context() as patch:
            patch.setattr(core, limit, size)
            with pytest.raises(core.CoreTooLarge):
                counted_dp(inst, scaled, every, 0.0, 0.0, 0)


@pytest.mark.parametrize("counted_dp", COUNTED_DPS)
def test_counted_dp_takes_a_limit_past_any_count(counted_dp) -> None:
    """A limit near 2**62 (no count can reach it) gives the unlimited tie-rule optimum."""
    inst = make_instance([[2, 1], [3, 1], [4, 2]], [[5.0, 2.0], [6.0, 3.0], [7.0, 1.0]], 6, max_records=2**62)
    scaled = scale(inst)
    expected = solve_dp(replace(inst, max_records=None), scaled).choice.tolist()
    assert counted_dp(inst, scaled, np.ones(3, dtype=bool), 0.0, 0.0, 0).tolist() == expected


@needs(native.module() is not None, "the compiled kernel")
def test_compiled_counted_dp_chooses_as_the_numpy_one_on_random_cores() -> None:
    """Cores of up to 14 rows, up to 5 levels (some masked), integer and float utilities, any λ, μ:
    the same allocation, or neither finds one; at the optimum's own value as the floor, too."""
    rng = np.random.default_rng(11)
    compared = 0
    for _ in range(400):
        n, k = int(rng.integers(1, 15)), int(rng.integers(1, 6))
        tokens = rng.integers(0, 9, size=(n, k))
        utility = rng.integers(0, 7, size=(n, k)).astype(float) if rng.random() < 0.5 else rng.random((n, k)) * 6
        inst = make_instance(tokens, utility, int(rng.integers(0, 40)), max_records=int(rng.integers(0, n + 1)),
                             mask=rng.random((n, k)) < 0.85)
        scaled = scale(inst)
        delete_ok = (rng.random(n) < 0.9) | ~scaled.usable.any(axis=1)
        lam, mu = [float(rng.random() * 3 * scaled.scale) if rng.random() < 0.5 else 0.0 for _ in range(2)]
        numpy_choice = pareto_dp_counted_numpy(inst, scaled, delete_ok, lam, mu, 0)
        compiled = pareto_dp_counted(inst, scaled, delete_ok, lam, mu, 0)
        if numpy_choice is None:  # no allocation meets the limit with the rows delete is denied
            assert compiled is None
            continue
        assert compiled.tolist() == numpy_choice.tolist()
        floor = scaled_value(scaled, numpy_choice)
        assert pareto_dp_counted(inst, scaled, delete_ok, lam, mu, floor).tolist() == numpy_choice.tolist()
        compared += 1
    assert compared > 300


@settings(max_examples=200, deadline=None)
@given(instances(max_n=6, max_k=3, integral=True), st.data())
def test_rising_floors_keep_the_tie_rule_optimum(inst, data) -> None:
    """The counted core by floors just below the bound first, from any feasible incumbent: the
    tie-rule optimum, whether a first floor holds it or every floor down to the incumbent's runs."""
    inst = _limited(inst, data)
    scaled = scale(inst)
    key = tie_key(inst, scaled)
    start = np.array(data.draw(st.sampled_from([c for c in feasible_choices(inst) if key(c) is not None])),
                     dtype=np.int64)
    red = fix(relax(inst, scaled), scaled, start)
    got = core._counted_core(inst, scaled, np.ones(inst.n, dtype=bool), red, scaled_value(scaled, start))
    assert tuple(got.tolist()) == _best(inst, scaled)


def test_an_incumbent_proven_on_the_grid_is_worth_the_optimum(monkeypatch) -> None:
    """With state limits small enough to overflow, the counted core either answers (the tie-rule
    optimum), overflows, or proves the incumbent's value optimal on the values' grid (integer
    utilities): then no allocation is worth more (exhaustive search). Every other start is an optimum,
    the start such a proof needs."""
    proofs = 0
    for seed in range(1500):
        rng = np.random.default_rng(seed)
        n, k = int(rng.integers(3, 7)), int(rng.integers(1, 4))
        tokens = rng.integers(1, 6, size=(n, k))
        utility = rng.integers(1, 8, size=(n, k)).astype(float)
        inst = make_instance(tokens, utility, int(rng.integers(2, tokens.sum())), max_records=int(rng.integers(1, n)))
        scaled = scale(inst)
        key = tie_key(inst, scaled)
        feasible = [c for c in feasible_choices(inst) if key(c) is not None]
        best = max(feasible, key=key)
        start = np.array(best if seed % 2 else feasible[int(rng.integers(len(feasible)))], dtype=np.int64)
        red = fix(relax(inst, scaled), scaled, start)
        monkeypatch.setattr(core, "MAX_STATES", int(rng.integers(1, 5)))
        monkeypatch.setattr(core, "MAX_WORK", int(rng.integers(1, 60)))
        monkeypatch.setattr(core, "KERNEL_FACTOR", 1)
        floor = scaled_value(scaled, start)
        try:
            got = core._counted_core(inst, scaled, np.ones(inst.n, dtype=bool), red, floor)
        except core.IncumbentOptimal:
            proofs += 1
            assert floor == scaled_value(scaled, np.array(best)), seed
        except core.CoreTooLarge:
            pass
        else:
            assert tuple(got.tolist()) == best, seed
    assert proofs >= 20


def test_a_proven_incumbent_gives_way_to_the_tie_rule_answer_of_tied_py(monkeypatch) -> None:
    """Where the counted DP overflows but proves the incumbent's value, and the bound is met at zero loss,
    tied.py's allocation (the whole tie rule: the dense DP's) is answered, not the incumbent (fewest
    tokens only). Small instances: rows whose levels all tie at (λ, μ) beside single-level rows, state
    limits shrunk so that the DP overflows (found by a reviewer: seed 92 answered the incumbent)."""
    monkeypatch.setattr(core, "MAX_STATES", 1)
    monkeypatch.setattr(core, "MAX_WORK", 4)
    monkeypatch.setattr(core, "KERNEL_FACTOR", 1)
    monkeypatch.setattr(core, "PRICED_MAX_ROWS", 10**9)  # no dense DP behind the counted one
    answered = 0
    for seed in range(80, 100):
        rng = np.random.default_rng(seed)
        tied_rows, single_rows, k = int(rng.integers(3, 7)), int(rng.integers(4, 8)), 3
        n = tied_rows + single_rows
        slope = int(rng.choice([1, 2, 4, 5, 7]))
        tokens = 3 * rng.integers(1, 9, size=(n, k))
        utility = tokens * slope / 3 + 3
        mask = np.ones((n, k), dtype=bool)
        single = np.zeros(n, dtype=bool)
        single[rng.choice(n, single_rows, replace=False)] = True
        mask[single, 1:] = False
        utility[single] += 2
        kept = int(rng.integers(1, tied_rows))
        rows = np.flatnonzero(~single)[:kept]
        budget = int(tokens[single, 0].sum() + sum(tokens[r, rng.integers(0, k)] for r in rows))
        inst = make_instance(tokens, utility, budget, mask=mask, max_records=single_rows + kept)
        scaled = scale(inst)
        found = _solve_counted(inst, scaled)
        if found is None:
            continue
        answered += 1
        assert "values' grid" not in found[0].detail, seed
        assert found[0].choice.tolist() == solve_dp(inst, scaled).choice.tolist(), seed
    assert answered >= 15


def test_weakly_correlated_at_90_percent_kept_is_the_incumbent_proven_on_whole_units() -> None:
    """Issue 18's weakly correlated class, 10,000 records, 8,794 kept (90 % of the unlimited optimum's):
    the counted DP overflows at the incumbent's value, but nothing reaches one unit above it, and the
    bound is less than a token's price above it, so every optimum fills the budget: the incumbent is an
    optimum with the fewest tokens, as CP-SAT's answer would be (before: CP-SAT, 1.1 s). CP-SAT agrees."""
    inst = _pisinger("weakly", 10000, 1, 8794)
    scaled = scale(inst)
    found = _solve_counted(inst, scaled)
    assert found is not None
    solution, red = found
    assert "values' grid" in solution.detail and core.TIES_BY_SEARCH in solution.detail
    assert solution.status == "optimal" and solution.tokens_used == inst.budget and solution.count <= 8794
    cp = run(inst, "cp-sat", "none", compare_greedy=False).solution
    assert cp.status == "optimal" and cp.scaled_objective == solution.scaled_objective
    assert cp.tokens_used == solution.tokens_used


def _noisy_correlated(n: int, noise: float, share: float, kept: float):
    """Utility about the tokens plus 10, with normal noise (a calibrated model where length is a feature),
    the budget a share of the lightest levels' tokens, the limit a share of the unlimited optimum's records."""
    rng = np.random.default_rng(3)
    tokens = rng.integers(1, 1000, size=(n, 5)).astype(np.int64)
    utility = np.clip(tokens + 10.0 + rng.normal(0, noise, size=tokens.shape), 0.01, None)
    budget = int(share * tokens.min(axis=1).sum())
    free = solve_dp(make_instance(tokens, utility, budget), scale(make_instance(tokens, utility, budget)))
    return make_instance(tokens, utility, budget, max_records=int(kept * int((free.choice >= 0).sum())))


def test_a_loose_incumbent_leaves_the_counted_dp_a_core_it_solves_at_a_floor_near_the_bound() -> None:
    """The incumbent stays 2.8 units below the optimum, the bound 0.35 above it: the core of 276 rows
    overflows the counted DP at the incumbent's floor, and is solved at 1/8 of the gap below the bound
    (before: CP-SAT, 0.7 s). The optimum is CP-SAT's on the whole instance."""
    inst = _noisy_correlated(1000, 10.0, 0.5, 0.9)
    scaled = scale(inst)
    found = _solve_counted(inst, scaled)
    assert found is not None
    solution, red = found
    assert red.core.size > 200 and solution.status == "optimal" and solution.bound == solution.objective
    assert solution.count <= inst.max_records and solution.tokens_used <= inst.budget
    cp = solve_cpsat(inst, scaled, time_limit_s=60)
    assert cp.status == "optimal" and cp.scaled_objective == solution.scaled_objective


@needs(native.module() is not None, "the compiled kernel (the counted DP's larger state limits)")
def test_integer_utilities_floor_the_counted_dp_on_whole_units(monkeypatch) -> None:
    """Issue 18's weakly correlated class (integer utilities), 1,000 records, 588 kept (60 % of the
    unlimited optimum's): every value is a whole number of units, so the floors tried are whole units
    below the bound, each once; the first holds nothing, the next the optimum (274 core rows, past
    1,000,000 states a row: the compiled DP's larger limits). Before: CP-SAT, 0.7 s. CP-SAT agrees."""
    inst = _pisinger("weakly", 1000, 1, 588)
    scaled = scale(inst)
    floors = []  # (the core's records, budget and limit, the floor, the gcd of its values)
    dp = core.pareto_dp_counted

    def spy(sub, sub_scaled, delete_ok, lam, mu, floor):
        core_of = (sub.n, sub.budget, sub.max_records)
        floors.append((core_of, floor, int(np.gcd.reduce(sub_scaled.values[sub_scaled.usable]))))
        return dp(sub, sub_scaled, delete_ok, lam, mu, floor)

    monkeypatch.setattr(core, "pareto_dp_counted", spy)
    found = _solve_counted(inst, scaled)
    assert found is not None
    solution, red = found
    assert red.core.size > 200 and solution.status == "optimal" and "counted DP" in solution.detail
    assert len(floors) == len({(core_of, floor) for core_of, floor, _ in floors}) >= 2  # each floor once
    assert all(floor % grid == 0 and grid > 1 for _, floor, grid in floors)
    cp = solve_cpsat(inst, scaled, time_limit_s=60)
    assert cp.status == "optimal" and cp.scaled_objective == solution.scaled_objective


@settings(max_examples=200, deadline=None)
@given(instances(max_n=6, max_k=3), st.data())
def test_fill_keeps_the_allocation_feasible_and_never_worse(inst, data) -> None:
    inst = _limited(inst, data)
    scaled = scale(inst)
    start = np.array(data.draw(st.sampled_from(list(feasible_choices(inst)))), dtype=np.int64)
    start = np.where((start >= 0) & ~scaled.usable[np.arange(inst.n), np.maximum(start, 0)], -1, start)
    filled = _fill(inst, _levels(inst, scaled, relax(inst, scaled)), start)
    rows = np.flatnonzero(filled >= 0)
    assert scaled.usable[rows, filled[rows]].all()
    assert int(inst.tokens[rows, filled[rows]].sum()) <= inst.budget
    assert rows.size <= inst.max_records
    assert scaled_value(scaled, filled) >= scaled_value(scaled, start)


def test_fill_takes_the_room_a_cut_allocation_leaves() -> None:
    inst = make_instance([[4, 1], [4, 1], [4, 1]], [[9.0, 2.0], [8.0, 2.0], [7.0, 2.0]], 9, max_records=2)
    scaled = scale(inst)
    filled = _fill(inst, _levels(inst, scaled, relax(inst, scaled)), np.full(3, -1, dtype=np.int64))
    assert filled.tolist() == [0, 0, -1]  # the two most valuable records, at full fidelity


@pytest.mark.parametrize("budget, limit", [(0, 2), (9, 0)])
def test_fill_at_zero_budget_or_zero_records_keeps_nothing(budget, limit) -> None:
    inst = make_instance([[4, 1], [3, 2]], [[9.0, 2.0], [8.0, 3.0]], budget, max_records=limit)
    scaled = scale(inst)
    filled = _fill(inst, _levels(inst, scaled, relax(inst, scaled)), np.full(2, -1, dtype=np.int64))
    assert filled.tolist() == [-1, -1]


def _pisinger(kind: str, n: int, seed: int, limit: int):
    """issue 18's classes (k = 5, R = 1,000; benchmarks/generators.py) with a count limit."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from generators import generate

    tokens, utility, budget = generate(kind, n, seed)
    return make_instance(tokens, utility, int(budget), max_records=limit)


@pytest.mark.parametrize("kind", ["memory", "uncorrelated", "weakly", "strongly", "subset-sum"])
@pytest.mark.parametrize("seed", [1, 2])
def test_counted_reduction_meets_cpsat(kind, seed) -> None:
    inst = _pisinger(kind, 200, seed, 60)
    scaled = scale(inst)
    found = _solve_counted(inst, scaled)
    assert found is not None, "the counted DP should take these cores"
    solution, red = found
    assert solution.status == "optimal" and solution.bound == solution.objective
    assert int((solution.choice >= 0).sum()) <= 60
    assert solution.tokens_used <= inst.budget
    assert red.incumbent_value <= solution.scaled_objective <= red.upper_bound + 1e-6 * abs(red.upper_bound)
    cp = solve_cpsat(inst, scaled, time_limit_s=20)  # the whole instance, no reduction
    if cp.status == "optimal":
        assert cp.scaled_objective == solution.scaled_objective
    else:  # CP-SAT out of time: it may not claim more than the DP proved
        assert cp.scaled_objective <= solution.scaled_objective
        assert cp.bound is None or cp.bound >= solution.objective - 1e-9 * (1 + abs(solution.objective))


@needs(native.module() is not None, "the compiled kernel")
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_counted_reduction_and_the_kernels_prices_choose_alike(seed) -> None:
    inst = generated("memory", 400, seed, max_records=80)
    scaled = scale(inst)
    priced = solve_kernel_counted(inst, scaled)
    counted = _solve_counted(inst, scaled)
    assert priced is not None and counted is not None
    assert counted[0].choice.tolist() == priced[0].choice.tolist()


@needs(native.module() is not None, "the compiled kernel (solve_kernel_reduced)")
def test_past_prices_first_rows_the_engine_takes_the_counted_dp_first() -> None:
    inst = generated("uncorrelated", core.PRICES_FIRST_ROWS + 1, 1, max_records=10)
    found = core.solve_kernel_reduced(inst, scale(inst))
    assert found is not None and "count limit by the counted DP" in found[0].detail
    assert int((found[0].choice >= 0).sum()) <= 10
    assert found[0].choice.tolist() == solve_dp(inst, scale(inst)).choice.tolist()


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(-5, 5), max_size=40))
def test_dense_rank_is_uniques_inverse(values) -> None:
    values = np.array(values, dtype=np.int64)
    expected = np.unique(values, return_inverse=True)[1].reshape(-1)
    assert core._dense_rank(values).tolist() == expected.tolist()


def test_prices_go_first_on_few_records_or_distinct_values() -> None:
    rng = np.random.default_rng(5)
    n = core.PRICES_FIRST_ROWS + 1
    tokens = rng.integers(1, 50, size=(n, 3))
    distinct = make_instance(tokens, rng.uniform(1, 50, size=(n, 3)), 500, max_records=5)
    grid = make_instance(tokens, rng.integers(1, 5, size=(n, 3)).astype(float), 500, max_records=5)
    few = make_instance(tokens[:3], rng.integers(1, 5, size=(3, 3)).astype(float), 500, max_records=1)
    assert core._prices_first(distinct, scale(distinct))
    assert not core._prices_first(grid, scale(grid))
    assert core._prices_first(few, scale(few))


def test_a_core_left_large_by_the_filled_start_gets_the_unfilled_starts_guesses() -> None:
    """Noisy strongly correlated utilities, half the lightest levels' tokens, 30 % kept: the filled
    start spends the room the guesses need, and its core is every record; the guesses from the best
    start unfilled bring it to a few dozen rows, which the counted DP then proves."""
    rng = np.random.default_rng(0)
    tokens = rng.integers(1, 1000, size=(1200, 5)).astype(np.int64)
    utility = np.clip(tokens + 10.0 + rng.normal(0, 1.0, size=tokens.shape), 0.01, None)
    inst = make_instance(tokens, utility, int(0.5 * tokens.min(axis=1).sum()), max_records=360)
    scaled = scale(inst)
    red = core.reduce_instance(inst, scaled)
    assert red.core.size <= 100
    rows = np.flatnonzero(red.incumbent >= 0)
    assert rows.size <= 360 and int(inst.tokens[rows, red.incumbent[rows]].sum()) <= inst.budget
    found = _solve_counted(inst, scaled)
    assert found is not None and found[0].status == "optimal" and found[0].bound == found[0].objective
    assert found[0].count <= 360 and found[0].tokens_used <= inst.budget


@needs(native.module() is not None, "the compiled kernel")
def test_the_kernels_state_limit_and_the_prices_budget(monkeypatch) -> None:
    """A solve that needs search states gives up under a lower state limit; the prices give up once
    their solves have spent PRICE_STATES, and the engine's other ways then answer alike."""
    inst = generated("memory", 400, 1, max_records=80)
    scaled = scale(inst)
    free = kernel.solve_kernel(replace(inst, max_records=None), scaled)
    assert free is not None and free.states > 10
    assert kernel.solve_kernel(replace(inst, max_records=None), scaled, state_limit=free.states // 2) is None
    priced = solve_kernel_counted(inst, scaled)
    assert priced is not None
    monkeypatch.setattr(kernel, "PRICE_STATES", 10)
    assert solve_kernel_counted(inst, scaled) is None
    found = run(inst, "dp", "none", compare_greedy=False).solution
    assert found.status == "optimal" and found.choice.tolist() == priced[0].choice.tolist()
