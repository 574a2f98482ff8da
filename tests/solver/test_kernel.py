"""The compiled kernel: the tie-rule optimum by exhaustive search and by the dense DP, its
reduction keeps every optimum, and the numpy path takes over where the kernel does not apply."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memsolve.solver import core, engines, kernel, make_instance, native, run, scale
from memsolve.solver.dp import solve_dp

from .helpers import feasible_choices, generated, instances, kernel_matches_exhaustive_search, tie_key


def test_the_kernel_is_built() -> None:
    """pip builds it wherever a C compiler exists (CI has one); a silent fallback would hide it."""
    assert native.built(), "memsolve.solver._kernel did not build: see pip's output"


def _unlimited(inst):
    return make_instance(inst.tokens, inst.utility, inst.budget, price=inst.price, mask=inst.mask)


@settings(max_examples=800, deadline=None)
@given(st.one_of(instances(max_n=6, max_k=4, integral=True), instances(max_n=7, max_k=3)))
def test_kernel_equals_exhaustive_search(inst) -> None:
    """Small integers (many ties) and floats: the tie-rule optimum, and a reduction that keeps
    every allocation tying its value and tokens."""
    inst = _unlimited(inst)
    expected, result, key = kernel_matches_exhaustive_search(inst)
    best = key(expected)[:2]
    for choice in feasible_choices(inst):
        if key(choice) is not None and key(choice)[:2] == best:
            assert all(result.keep[i, j if j >= 0 else inst.k] for i, j in enumerate(choice))
    assert result.value == best[0] and result.tokens == -best[1]
    assert result.core.tolist() == np.flatnonzero(result.keep.sum(axis=1) > 1).tolist()
    assert result.upper_bound >= result.value


@settings(max_examples=120, deadline=None)
@given(st.sampled_from(["memory", "uncorrelated", "strong", "subset", "ties"]), st.integers(130, 400),
       st.integers(0, 2**31))
def test_kernel_equals_dense_dp_past_the_ranked_rows(kind, n, seed) -> None:
    """More rows than the kernel ranks for Pisinger's bound (128), so its fallback is exercised."""
    inst = generated(kind, n, seed)
    scaled = scale(inst)
    dense = solve_dp(inst, scaled)
    result = kernel.solve_kernel(inst, scaled)
    assert result is not None
    assert result.value == dense.scaled_objective
    assert result.tokens == int(inst.tokens[dense.choice >= 0, dense.choice[dense.choice >= 0]].sum())
    if result.tie_rule:
        assert result.choice.tolist() == dense.choice.tolist()
    else:  # only where millions of allocations tie
        assert kind in ("strong", "subset", "ties")


@settings(max_examples=80, deadline=None)
@given(st.integers(150, 600), st.integers(2, 6), st.floats(0.05, 0.9), st.integers(0, 2**31))
def test_kernel_equals_dense_dp_on_random_shapes(n, k, fraction, seed) -> None:
    """Random level counts, sizes and budgets: the ranked rows' bounds and the candidate order
    change from instance to instance (a mismatch between a ranked row and its increment once
    slipped through the class-based test above)."""
    rng = np.random.default_rng(seed)
    tokens = rng.integers(0, 60, size=(n, k))
    utility = np.round(rng.uniform(0, 30, size=(n, k)), int(rng.integers(0, 3)))
    mask = rng.random((n, k)) < 0.9
    inst = make_instance(tokens, utility, int(tokens.sum(axis=1).mean() * n * fraction / k), mask=mask,
                         price=float(rng.choice([0.0, 0.05])))
    scaled = scale(inst)
    dense = solve_dp(inst, scaled)
    result = kernel.solve_kernel(inst, scaled)
    assert result is not None and result.value == dense.scaled_objective
    if result.tie_rule:
        assert result.choice.tolist() == dense.choice.tolist()


def test_pisingers_bound_keeps_the_search_small() -> None:
    """Work, not time: the number of search states is deterministic. Memory-shaped instances
    need a few thousand; a broken bound (once: ranked rows paired with the wrong increments)
    needed four times as many."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from generators import memory

    for n, most in ((1000, 40_000), (10_000, 25_000), (100_000, 15_000)):
        tokens, utility, budget = memory(n, 1)
        inst = make_instance(tokens, utility, budget)
        result = kernel.solve_kernel(inst, scale(inst))
        assert result is not None and result.tie_rule
        assert result.states <= most, (n, result.states)


def test_many_exact_ties_get_the_full_tie_rule_from_the_expanding_tail() -> None:
    """5,000 records with sizes 1-5 and utilities 1-3: too large a table for the dense DP
    (2.5e7 cells); the tie rule's tail DP enumerates a few hundred of the free rows, with or
    without the bounded-table allowance."""
    inst = generated("ties", 5000, 0)
    scaled = scale(inst)
    expected = solve_dp(inst, scaled).choice.tolist()
    for bounded_ties in (False, True):
        result = kernel.solve_kernel(inst, scaled, bounded_ties=bounded_ties)
        assert result.tie_rule
        assert 0 < result.tail_rows < result.core.size  # the lead took the first free rows
        assert result.choice.tolist() == expected


def test_the_tie_rule_is_applied_on_generated_classes() -> None:
    """The flag above is not vacuous: most generated instances get the full tie rule."""
    applied = [kernel.solve_kernel(inst, scale(inst)).tie_rule
               for inst in (generated(kind, 200, seed) for kind in ("memory", "uncorrelated", "ties")
                            for seed in range(5))]
    assert all(applied)


def _benchmark_class(kind: str, n: int, seed: int = 1):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from generators import generate

    tokens, utility, budget = generate(kind, n, seed)
    return make_instance(tokens, utility, budget)


def test_too_many_tied_optima_keep_value_and_tokens_and_say_so(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pisinger's weakly correlated class at 50,000 records: the lead spends the bound's slack
    on the first free rows, and the tail the tie rule needs (3,952 rows) passes the state limit
    of the Pareto layers; the bitset of token sums (every kept level ties at the multiplier)
    takes it whole."""
    inst = _benchmark_class("weakly", 50_000)
    scaled = scale(inst)
    pareto = kernel.solve_kernel(inst, scaled, pareto_tail=True)
    assert pareto is not None and not pareto.tie_rule and pareto.tail_rows == 0
    bits = kernel.solve_kernel(inst, scaled)
    assert bits is not None and bits.tie_rule and bits.tail_rows > 1000
    assert (bits.value, bits.tokens) == (pareto.value, pareto.tokens)
    assert "tied optima" not in run(inst, "dp", "none", compare_greedy=False).solution.detail
    # where the tail gives up, the engine reports phase 1's optimum and says so
    plain = kernel.solve_kernel
    monkeypatch.setattr(kernel, "solve_kernel", lambda *args, **options: plain(*args, **options, pareto_tail=True))
    monkeypatch.setattr(engines.Job, "one_call", False)  # the Job's one call does not go through solve_kernel
    solution = run(inst, "dp", "none", compare_greedy=False).solution
    assert solution.status == "optimal" and solution.bound == solution.objective
    # phase 1's optimum: its value, with the fewest tokens any allocation of that value has
    assert solution.scaled_objective == pareto.value and solution.tokens_used == pareto.tokens
    assert "too many tied optima" in solution.detail


@pytest.mark.parametrize("kind", ["weakly", "strongly", "subset-sum"])
@pytest.mark.parametrize(("n", "seed"), [(300, 1), (2_000, 2), (10_000, 3)])
def test_the_bitset_tail_equals_the_pareto_tail(kind: str, n: int, seed: int) -> None:
    """Every kept level ties at the multiplier (the optimum is worth the bound): the tail by a
    bitset of token sums gives the Pareto layers' allocation, with far fewer states."""
    inst = _benchmark_class(kind, n, seed)
    scaled = scale(inst)
    bits = kernel.solve_kernel(inst, scaled)
    pareto = kernel.solve_kernel(inst, scaled, pareto_tail=True)
    assert bits.tie_rule and pareto.tie_rule
    assert bits.choice.tolist() == pareto.choice.tolist()
    assert bits.keep.tolist() == pareto.keep.tolist() and bits.tail_rows == pareto.tail_rows


def test_strongly_correlated_instances_get_the_full_tie_rule_from_the_kernel() -> None:
    """Before the expanding tail these went to the dense DP (small) or lost the fidelity order."""
    rng = np.random.default_rng(2)
    tokens = rng.integers(1, 1000, size=(100, 5))  # Pisinger's strongly correlated class
    budget = int((tokens.min(axis=1).sum() + tokens.max(axis=1).sum()) // 2)
    inst = make_instance(tokens, tokens + 10.0, budget)
    expected = solve_dp(inst, scale(inst)).choice.tolist()
    result = kernel.solve_kernel(inst, scale(inst), bounded_ties=False)
    assert result.tie_rule and result.choice.tolist() == expected
    outcome = run(inst, "dp", "none", compare_greedy=False)
    assert "tied optima" not in outcome.solution.detail and "dense DP" not in outcome.solution.detail
    assert outcome.solution.choice.tolist() == expected


def test_the_numpy_path_takes_over_past_the_kernel_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    inst = generated("memory", 300, 4)
    expected = run(inst, "dp", "none").solution
    monkeypatch.setattr(core, "solve_kernel_counted", lambda instance, scaled, **options: None)
    fallback = run(inst, "dp", "none")
    assert fallback.solution.choice.tolist() == expected.choice.tolist()
    assert fallback.reduction is not None


@pytest.mark.parametrize("kind", ["memory", "uncorrelated", "ties"])
def test_kernel_and_numpy_paths_give_the_same_allocation(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    inst = generated(kind, 1500, 9)
    with_kernel = run(inst, "cp-sat", "dp")
    monkeypatch.setenv("MEMSOLVE_KERNEL", "numpy")
    assert not kernel.applies(inst)
    without = run(inst, "cp-sat", "dp")
    assert with_kernel.solution.choice.tolist() == without.solution.choice.tolist()
    assert with_kernel.cross_check.agrees and without.cross_check.agrees


def test_the_kernel_answers_count_limits_by_a_price_per_record() -> None:
    loose = generated("memory", 60, 1, max_records=59)
    found = core.solve_kernel_reduced(loose, scale(loose))
    assert found is not None and found[0].count <= 59 and "price" not in found[0].detail  # does not bind
    assert found[0].choice.tolist() == solve_dp(loose, scale(loose)).choice.tolist()  # the limited tie rule
    tight = generated("memory", 60, 1, max_records=5)
    found = core.solve_kernel_reduced(tight, scale(tight))
    assert found is not None and found[0].count == 5 and "price" in found[0].detail
    assert found[0].choice.tolist() == solve_dp(tight, scale(tight)).choice.tolist()
    outcome = run(tight, "dp", "cp-sat", compare_greedy=False)
    assert outcome.solution.count <= 5 and outcome.cross_check.agrees
    assert outcome.solution.choice.tolist() == solve_dp(tight, scale(tight)).choice.tolist()


def test_a_count_limit_with_a_duality_gap_goes_to_the_numpy_path() -> None:
    """Integer utilities: at the price where the count falls past M, two allocations swap
    several records at once, so no price keeps exactly M; the numpy path's DP answers."""
    rng = np.random.default_rng(1)
    tokens = rng.integers(1, 40, size=(40, 3))
    inst = make_instance(tokens, rng.integers(1, 40, size=(40, 3)).astype(float), int(tokens.sum() // 6),
                         max_records=7)
    scaled = scale(inst)
    counted = kernel.solve_kernel_counted(inst, scaled)
    expected = solve_dp(inst, scaled)
    outcome = run(inst, "dp", "cp-sat", compare_greedy=False)
    assert outcome.cross_check.agrees
    assert outcome.solution.choice.tolist() == expected.choice.tolist()
    if counted is not None:  # where a price does meet the limit, it is the same allocation
        assert counted[0].choice.tolist() == expected.choice.tolist()


@settings(max_examples=500, deadline=None)
@given(st.one_of(instances(max_n=6, max_k=3, integral=True), instances(max_n=7, max_k=3)))
def test_the_priced_kernel_equals_exhaustive_search_under_a_count_limit(inst) -> None:
    """Wherever a price per record meets the count limit, the tie-rule optimum of the limited instance."""
    scaled = scale(inst)
    found = core.solve_kernel_reduced(inst, scaled)
    if found is None:
        return
    key = tie_key(inst, scaled)
    expected = max((c for c in feasible_choices(inst) if key(c) is not None), key=key)
    assert tuple(found[0].choice.tolist()) == expected
    assert found[0].bound == found[0].objective


def test_the_priced_kernel_answers_most_limited_instances() -> None:
    """The test above is not vacuous: on float utilities most binding limits are met by a price."""
    answered = binding = 0
    for seed in range(40):
        inst = generated("memory", 40, seed, max_records=1 + seed % 10)
        if int((solve_dp(make_instance(inst.tokens, inst.utility, inst.budget, price=inst.price)).choice >= 0)
               .sum()) <= inst.max_records:
            continue
        binding += 1
        answered += core.solve_kernel_reduced(inst, scale(inst)) is not None
    assert binding >= 30 and answered >= binding * 3 // 4, (answered, binding)


def test_the_kernel_rejects_mismatched_arrays() -> None:
    module = native.module()
    assert module is not None
    tokens = np.zeros((3, 2), dtype=np.int64)
    with pytest.raises(ValueError, match="array sizes"):
        module.solve(3, 2, tokens, tokens, np.zeros(5, dtype=np.uint8), 10,
                      np.empty(3, dtype=np.int64), np.empty((3, 3), dtype=np.uint8), np.empty(3, dtype=np.int64), True)


@pytest.mark.parametrize("kind", ["memory", "uncorrelated", "strong", "subset", "ties"])
def test_the_kernel_lp_equals_the_numpy_relaxation(kind: str) -> None:
    """Two implementations of the LP split (exact fractions in C, weighted selection in numpy)."""
    from memsolve.solver.reduce import relax

    # past the sampled-pivot stage of the C selection (4,096 increments), except for the strongly
    # correlated class, whose large instances with thousands of rows tied at λ the kernel leaves
    # to the numpy path (its state limit)
    n = 1000 if kind == "strong" else 20000
    for seed in range(3):
        inst = generated(kind, n, seed)
        scaled = scale(inst)
        result = kernel.solve_kernel(inst, scaled)
        assert result is not None
        lp = relax(inst, scaled)
        assert result.multiplier == lp.multiplier
        assert abs(result.upper_bound - lp.upper_bound) <= 1e-9 * abs(lp.upper_bound) + 1


@settings(max_examples=200, deadline=None)
@given(instances(max_n=30, max_k=5), st.sampled_from([1.0, 1e3, 1e9, 1e13]))
def test_compiled_scaling_equals_numpy(inst, magnitude) -> None:
    import os

    inst = make_instance(inst.tokens, inst.utility * magnitude, inst.budget, price=inst.price, mask=inst.mask)
    compiled = scale(inst)
    os.environ["MEMSOLVE_KERNEL"] = "numpy"
    try:
        reference = scale(inst)
    finally:
        del os.environ["MEMSOLVE_KERNEL"]
    assert compiled.scale == reference.scale
    assert compiled.values.tolist() == reference.values.tolist()
    assert compiled.usable.tolist() == reference.usable.tolist()


def _without_kernel(func):
    import os

    os.environ["MEMSOLVE_KERNEL"] = "numpy"
    try:
        return func()
    finally:
        del os.environ["MEMSOLVE_KERNEL"]


@settings(max_examples=200, deadline=None)
@given(instances(max_n=12, max_k=4, integral=True), st.booleans())
def test_compiled_greedy_walk_equals_python(inst, by_score) -> None:
    from memsolve.solver.greedy import solve_greedy

    scores = np.round(np.linspace(1, 0, inst.n), 1) if by_score else None  # with ties
    compiled = solve_greedy(inst, scores=scores)
    assert compiled.choice.tolist() == _without_kernel(lambda: solve_greedy(inst, scores=scores)).choice.tolist()


def _count_dual(inst, scaled, limit: int, lam: float) -> float:
    """U(λ, μ) as reduce.py defines it: λB + μM + Σ_i max(0, max_j (v_ij − λ s_ij − μ)), with μ
    the (M+1)-th largest positive best gain of a row at λ (0 when at most M rows gain)."""
    reduced = np.where(scaled.usable, scaled.values - lam * inst.tokens, -np.inf)
    gains = reduced.max(axis=1, initial=-np.inf)
    gains = np.sort(gains[gains > 0])[::-1]
    mu = float(gains[limit]) if gains.size > limit else 0.0
    return lam * inst.budget + mu * limit + float(np.maximum(reduced - mu, 0.0).max(axis=1, initial=0.0).sum())


@pytest.mark.parametrize("limit", [0, 10, 400, 4999])
def test_compiled_count_dual_equals_numpy(limit: int) -> None:
    """The count-limited dual, in C and in numpy: the LP relaxation (whose multiplier search
    evaluates it some thirty times) comes out the same on both paths, and the compiled function
    equals its definition at fixed multipliers."""
    from memsolve.solver.reduce import relax

    inst = generated("memory", 5000, 3, max_records=limit)
    scaled = scale(inst)
    compiled = relax(inst, scaled)
    reference = _without_kernel(lambda: relax(inst, scale(inst)))
    assert compiled.multiplier == reference.multiplier
    assert abs(compiled.upper_bound - reference.upper_bound) <= 1e-12 * abs(reference.upper_bound)
    assert compiled.floor.tolist() == reference.floor.tolist()
    module = native.module()
    assert module is not None
    # the kernel's layout: (k+1, n) columns of values (-inf where unusable) and sizes, delete last
    values = np.zeros((inst.k + 1, inst.n))
    values[: inst.k] = np.where(scaled.usable, scaled.values, -np.inf).T
    sizes = np.zeros((inst.k + 1, inst.n))
    sizes[: inst.k] = inst.tokens.T
    for lam in (0.0, 1e3, 37000.5, 1e6):
        dual, _ = module.dual(inst.k + 1, inst.n, values, sizes, float(inst.budget), lam, limit, np.empty(inst.n))
        expected = _count_dual(inst, scaled, limit, lam)
        assert abs(dual - expected) <= 1e-12 * abs(expected)


@st.composite
def _rows_of_equal_tokens(draw):
    """Rows whose levels often share token counts (and never take 0 tokens): the hull of sorted keys."""
    n = draw(st.integers(1, 12))
    k = draw(st.integers(1, 9))
    tokens = np.array(draw(st.lists(st.integers(1, 6), min_size=n * k, max_size=n * k)), dtype=np.int64)
    utility = np.array(draw(st.lists(st.integers(1, 8), min_size=n * k, max_size=n * k)), dtype=float)
    budget = draw(st.integers(0, int(tokens.sum())))
    return make_instance(tokens.reshape(n, k), utility.reshape(n, k), budget)


@settings(max_examples=300, deadline=None)
@given(_rows_of_equal_tokens())
def test_the_kernel_hulls_equal_the_numpy_hulls_where_levels_share_tokens(inst) -> None:
    """The kernel sorts a row's levels by (tokens, fidelity) keys; equal tokens with different values
    must give the hull that (tokens, value descending, fidelity) gives: numpy's, and the same optimum."""
    from memsolve.solver.reduce import relax

    scaled = scale(inst)
    result = kernel.solve_kernel(inst, scaled, shortcut=False)  # hulls counted
    lp = relax(inst, scaled)
    assert (result.hull_levels, result.lp_dominated) == (lp.hull_levels, lp.lp_dominated)
    key = tie_key(inst, scaled)
    if inst.n <= 7 and inst.k <= 4:
        expected = max((c for c in feasible_choices(inst) if key(c) is not None), key=key)
        assert tuple(result.choice.tolist()) == expected


def test_the_numpy_path_keeps_the_tie_rule_where_a_count_limit_does_not_bind(monkeypatch: pytest.MonkeyPatch) -> None:
    """Found in a stress run: subset-sum, 308 records, at most 203 kept. The unlimited optimum keeps
    111, so it is the limited tie-rule optimum too (the kernel's answer); the numpy path's dense DP
    with a count dimension was too large and CP-SAT's allocation (not the tie rule's) was reported.
    Now the dense DP without the count answers when its optimum keeps no more than the limit."""
    inst = generated("subset", 308, 336, max_records=203)
    with_kernel = run(inst, "dp", "none", compare_greedy=False).solution
    free = solve_dp(make_instance(inst.tokens, inst.utility, inst.budget), None)
    assert with_kernel.choice.tolist() == free.choice.tolist() and free.count <= 203
    monkeypatch.setenv("MEMSOLVE_KERNEL", "numpy")
    without = run(inst, "dp", "none", compare_greedy=False).solution
    assert without.engine == "dp" and without.choice.tolist() == with_kernel.choice.tolist()
