"""The kernel on Pisinger's correlated classes and the edge shapes: exhaustive search where it
reaches, the dense DP beyond, and the numpy path where the optimum search adds many rows."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memsolve.solver import kernel, make_instance, native, run, scale, solve_arrays
from memsolve.solver.dp import solve_dp

from .helpers import kernel_matches_exhaustive_search


@st.composite
def _utility_of(draw, tokens: np.ndarray, noise: int) -> np.ndarray:
    """Utilities correlated with ``tokens``: + c (strongly), equal (subset-sum), or within ±noise (weakly)."""
    kind = draw(st.sampled_from(["strongly", "subset-sum", "weakly"]))
    if kind == "strongly":
        return tokens + float(draw(st.integers(1, 5)))
    if kind == "subset-sum":
        return tokens.astype(float)
    added = draw(st.lists(st.integers(-noise, noise), min_size=tokens.size, max_size=tokens.size))
    return np.maximum(tokens + np.array(added, dtype=float).reshape(tokens.shape), 0.0)


@st.composite
def correlated(draw, max_n: int = 7, max_k: int = 3):
    """Utility = tokens + c (strongly), = tokens (subset-sum), or tokens plus small noise
    (weakly): the classes where millions of allocations tie at the LP multiplier."""
    n = draw(st.integers(0, max_n))
    k = draw(st.integers(1, max_k))
    tokens = np.array(draw(st.lists(st.integers(0, 15), min_size=n * k, max_size=n * k)), dtype=np.int64)
    tokens = tokens.reshape(n, k)
    utility = draw(_utility_of(tokens, noise=2))
    budget = draw(st.integers(0, int(tokens.sum()) + 1))
    return make_instance(tokens, utility, budget)


@settings(max_examples=400, deadline=None)
@given(correlated())
def test_kernel_equals_exhaustive_search_on_correlated_classes(inst) -> None:
    kernel_matches_exhaustive_search(inst)


def _pisinger(kind: str, n: int, seed: int, r: int = 60, k: int = 5):
    rng = np.random.default_rng(seed)
    tokens = rng.integers(1, r + 1, size=(n, k))
    utility = {
        "weakly": lambda: np.maximum(tokens + rng.integers(-3, 4, size=tokens.shape), 1),
        "strongly": lambda: tokens + 5,
        "subset-sum": lambda: tokens,
        "uncorrelated": lambda: rng.integers(1, r + 1, size=tokens.shape),
    }[kind]().astype(float)
    budget = int((tokens.min(axis=1).sum() + tokens.max(axis=1).sum()) // 2)
    return make_instance(tokens, utility, budget)


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(["weakly", "strongly", "subset-sum", "uncorrelated"]), st.integers(150, 700),
       st.integers(0, 2**31))
def test_kernel_equals_dense_dp_on_pisingers_classes(kind, n, seed) -> None:
    """Hundreds of free rows: the tie rule's tail has to grow past its first try on many."""
    inst = _pisinger(kind, n, seed)
    scaled = scale(inst)
    dense = solve_dp(inst, scaled)
    result = kernel.solve_kernel(inst, scaled)
    assert result is not None and result.tie_rule
    assert result.value == dense.scaled_objective
    assert result.choice.tolist() == dense.choice.tolist()
    assert result.tail_rows <= result.core.size


def test_the_tail_is_a_small_part_of_the_free_rows_on_the_correlated_classes() -> None:
    """Work, not time: on the strongly correlated and subset-sum classes every row is free
    (all levels tie at the LP multiplier), and the tail DP enumerates a few dozen of them."""
    for kind in ("strongly", "subset-sum"):
        inst = _pisinger(kind, 2000, 3, r=1000)
        result = kernel.solve_kernel(inst, scale(inst))
        assert result.tie_rule and result.core.size > 1000
        assert result.tail_rows < 100, (kind, result.tail_rows)


def test_the_tie_fill_reaches_the_bound_and_the_search_only_confirms_it() -> None:
    """Work, not time: on the correlated classes the optimum is worth the LP bound, and the
    exact fill of the floor's room by tied options is found before the search, which then
    generates a handful of states (weakly, 1,000 rows of R = 1000: 187,105 before); the answer is the dense DP's."""
    for kind in ("weakly", "strongly", "subset-sum"):
        inst = _pisinger(kind, 500, 7, r=200)
        scaled = scale(inst)
        result = kernel.solve_kernel(inst, scaled)
        assert result.tie_rule and result.value == round(result.upper_bound)
        assert result.search_states <= 20, (kind, result.search_states)
        assert result.choice.tolist() == solve_dp(inst, scaled).choice.tolist()


def test_many_rows_join_the_optimum_search_and_the_numpy_path_agrees(monkeypatch: pytest.MonkeyPatch) -> None:
    """Uncorrelated, 10,000 records: the optimum search adds dozens of rows before no outside
    row can change; the numpy reductions and core DP (independent code) give the same allocation."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from generators import generate

    tokens, utility, budget = generate("uncorrelated", 10_000, 1)
    inst = make_instance(tokens, utility, budget)
    result = kernel.solve_kernel(inst, scale(inst))
    assert result.tie_rule and result.searched_rows >= 40
    with_kernel = run(inst, "dp", "none", compare_greedy=False).solution
    monkeypatch.setenv("MEMSOLVE_KERNEL", "numpy")
    without = run(inst, "dp", "none", compare_greedy=False).solution
    assert with_kernel.choice.tolist() == without.choice.tolist()


@pytest.mark.parametrize("kernel_on", [True, False])
def test_empty_and_zero_budget_instances(kernel_on: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if not kernel_on:
        monkeypatch.setenv("MEMSOLVE_KERNEL", "numpy")
    empty = solve_arrays(np.zeros((0, 3), dtype=np.int64), np.zeros((0, 3)), 100)
    assert empty.status == "optimal" and empty.choice.size == 0 and empty.objective == 0.0 == empty.bound
    # budget 0: only levels of 0 tokens can be kept (a free summary is kept, the rest deleted)
    tokens = np.array([[5, 0], [3, 2], [0, 0]])
    utility = np.array([[9.0, 1.0], [4.0, 2.0], [3.0, 3.0]])
    zero = solve_arrays(tokens, utility, 0)
    assert zero.choice.tolist() == [1, -1, 0]  # row 2: both levels free and equal, the higher fidelity
    assert zero.tokens_used == 0 and zero.objective == zero.bound == 4.0


def test_a_single_row_and_all_rows_fitting() -> None:
    one = solve_arrays(np.array([[10, 4, 1]]), np.array([[5.0, 4.0, 1.0]]), 4)
    assert one.choice.tolist() == [1] and one.objective == one.bound == 4.0
    rng = np.random.default_rng(0)
    tokens = rng.integers(1, 50, size=(300, 4))
    utility = tokens + 3.0
    roomy = solve_arrays(tokens, utility, int(tokens.max(axis=1).sum()))  # everything fits: no LP split
    assert roomy.status == "optimal"
    assert roomy.choice.tolist() == np.argmax(utility, axis=1).tolist()


# Found in review: budgets where no allocation fills the room exactly


@st.composite
def near_the_top(draw, max_n: int = 7, max_k: int = 3):
    """Correlated rows with the budget a few tokens below every row's heaviest level or around every
    row's lightest, or tokens that share a factor with a budget that is not a multiple of it (no
    exact fill: the optimum is below the LP bound and every tied allocation looks alike to the
    search; the tied fill from the lightest or the heaviest tied options)."""
    n = draw(st.integers(1, max_n))
    k = draw(st.integers(1, max_k))
    factor = draw(st.sampled_from([1, 1, 2, 3]))
    tokens = np.array(draw(st.lists(st.integers(1, 15), min_size=n * k, max_size=n * k)), dtype=np.int64)
    tokens = tokens.reshape(n, k) * factor
    utility = draw(_utility_of(tokens, noise=1))
    top, bottom = int(tokens.max(axis=1).sum()), int(tokens.min(axis=1).sum())
    budget = draw(st.one_of(st.integers(max(top - 4 * factor, 0), top), st.integers(0, top),
                            st.integers(max(bottom - 4 * factor, 0), bottom + 4 * factor)))
    return make_instance(tokens, utility, budget)


@settings(max_examples=600, deadline=None)
@given(near_the_top())
def test_kernel_equals_exhaustive_search_where_no_exact_fill_exists(inst) -> None:
    kernel_matches_exhaustive_search(inst)


def _pisinger_tokens(n: int, seed: int, r: int, k: int = 5) -> np.ndarray:
    return np.random.default_rng(seed).integers(1, r + 1, size=(n, k))


@pytest.mark.parametrize("kind", ["strongly", "subset-sum"])
@pytest.mark.parametrize(("n", "seed", "below"), [(150, 1, 1), (200, 3, 2), (200, 7, 3), (200, 8, 3), (300, 7, 1)])
def test_a_budget_just_below_every_heaviest_level_is_solved_by_the_kernel(kind, n, seed, below) -> None:
    """The budget `below` tokens under every row at its heaviest level: every level ties at the LP
    multiplier, the optimum is below the bound when no row loses exactly `below` tokens, and the
    search cannot prune a state (before: past its state limit, then CP-SAT under its time limit).
    The loss fill proves the optimum; the dense DP gives the same allocation."""
    tokens = _pisinger_tokens(n, seed, 1000)
    utility = tokens + (10.0 if kind == "strongly" else 0.0)
    inst = make_instance(tokens, utility, int(tokens.max(axis=1).sum()) - below)
    scaled = scale(inst)
    result = kernel.solve_kernel(inst, scaled)
    assert result is not None and result.tie_rule and result.search_states <= 20
    dense = solve_dp(inst, scaled)
    assert result.value == dense.scaled_objective and result.choice.tolist() == dense.choice.tolist()
    answer = solve_arrays(tokens, utility, inst.budget)
    assert answer.status == "optimal" and answer.bound == answer.objective
    assert answer.choice.tolist() == dense.choice.tolist()


def test_the_optimum_below_the_bound_is_proven_without_the_search() -> None:
    """Strongly correlated, 200 rows of R = 1000, one token below every heaviest level: no row loses
    exactly one token, so the optimum is 2 below the bound (before: no answer from the kernel)."""
    tokens = _pisinger_tokens(200, 3, 1000)
    inst = make_instance(tokens, tokens + 10.0, int(tokens.max(axis=1).sum()) - 1)
    scaled = scale(inst)
    result = kernel.solve_kernel(inst, scaled)
    assert result is not None and result.tie_rule and result.searched_rows == 0
    assert round(result.upper_bound) - result.value == 2 * scaled.scale
    dense = solve_dp(inst, scaled)
    assert result.choice.tolist() == dense.choice.tolist()


@pytest.mark.parametrize("n", [300, 2_000])
def test_even_tokens_and_an_odd_budget_are_the_instance_halved(n) -> None:
    """Weakly correlated with every token even and the budget odd: no exact fill, and the search
    passed its state limit (before: 2,000 rows went to the numpy path). Every allocation's tokens
    are even, so the capacity is the budget less one, and the allocation is the halved instance's."""
    tokens = _pisinger_tokens(n, 1, 1000)
    rng = np.random.default_rng(4)
    utility = np.maximum(tokens + rng.integers(-10, 11, size=tokens.shape), 1).astype(float)
    half = int((tokens.min(axis=1).sum() + tokens.max(axis=1).sum()) // 2)
    doubled = make_instance(2 * tokens, utility, 2 * half + 1)
    result = kernel.solve_kernel(doubled, scale(doubled))
    assert result is not None and result.tie_rule
    plain = make_instance(tokens, utility, half)
    expected = kernel.solve_kernel(plain, scale(plain))
    assert result.choice.tolist() == expected.choice.tolist() and result.search_states == expected.search_states
    assert solve_arrays(2 * tokens, utility, 2 * half + 1).choice.tolist() == expected.choice.tolist()


@pytest.mark.parametrize("kind", ["strongly", "subset-sum", "weakly"])
def test_the_order_of_many_tied_candidates_does_not_change_the_answer(kind) -> None:
    """Past 16,384 candidates of one gap (every row tied) the kernel takes the first 64 by select_tied and
    riffles the rest (_kernel.c: riffle) where quickselect scrambled them: the search, tie fill and tie
    rule see another order; the allocation, V*, W*, kept levels and free rows are the same."""
    native_kernel = native.module()
    for n, share in ((16_500, 1.0), (20_000, 0.7)):
        inst = _pisinger(kind, n, 11, r=1000)
        inst = make_instance(inst.tokens, inst.utility, int(inst.budget * share))
        found = []
        for on in (True, False):
            assert native_kernel.riffle(on) is on
            try:
                found.append(kernel.solve_kernel(inst, scale(inst)))
            finally:
                native_kernel.riffle(True)
        riffled, scrambled = found
        assert riffled.choice.tolist() == scrambled.choice.tolist() and riffled.keep.tolist() == scrambled.keep.tolist()
        assert riffled.core.tolist() == scrambled.core.tolist() and riffled.tie_rule and scrambled.tie_rule
        assert (riffled.value, riffled.tokens) == (scrambled.value, scrambled.tokens)
