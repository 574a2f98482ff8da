"""The kernel's shortcut where the budget binds no row (_kernel.c: fits_all): each row's most valuable
level, the lightest of those, the first of equals, fits with every other row's; that allocation is the
optimum and the tie rule's, found without search. It must give everything the full path gives (the
allocation, V* and W*, the multiplier 0, the bound, the kept levels and the free rows). Where a sample
of rows (every row of fewer than 64) says the bests take at most 0.8 of the budget it answers before
the hulls, whose counts it then does not take (-1); else the hulls tell, and their counts are the full
path's. Where the budget binds, even by one token, or for the optimum alone (mode -1), it steps aside.
Where the arrays' width trusts them (scaled arrays, and raw ones with tokens >= 0 and values > 0), with
AVX-512 and at most 8 levels, the rows' bests come from vector reductions, and the sample's share is 1.25
where no band's grid is drawn."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memsolve.solver import kernel, make_instance, native, scale, solve_arrays

from .test_kernel_band import GRID_MODES, _grid
from .test_kernel_passes import _raw_optimum

KERNEL = native.module()
pytestmark = pytest.mark.skipif(KERNEL is None, reason="the compiled kernel is not built")


def _solve(tokens, values, usable, capacity, shortcut, mode=1):
    n, k = tokens.shape
    choice, keep, core = np.empty(n, np.int64), np.empty((n, k + 1), np.uint8), np.empty(n, np.int64)
    info = KERNEL.solve(n, k, tokens, values, usable, capacity, choice, keep, core, mode, False, -1, shortcut)
    return info, choice, keep, core


def _lightest_best(tokens, values, usable) -> int:
    """The tokens of every row at its most valuable usable level, the lightest of those (0: no level)."""
    total = 0
    for w, v, ok in zip(tokens, values, usable.astype(bool), strict=True):
        if ok.any():
            top = v[ok].max()
            total += int(w[ok & (v == top)].min())
    return total


@st.composite
def _rows(draw):
    """Small rows with many equal values and tokens (ties within a row), unusable levels, rows with no
    usable level, zero tokens; the budget at, just below or well above what the rows' bests take."""
    n = draw(st.integers(0, 7))
    k = draw(st.integers(1, 5))
    tokens = np.array(draw(st.lists(st.integers(0, 6), min_size=n * k, max_size=n * k)), np.int64).reshape(n, k)
    values = np.array(draw(st.lists(st.integers(1, 4), min_size=n * k, max_size=n * k)), np.int64).reshape(n, k)
    usable = np.array(draw(st.lists(st.booleans(), min_size=n * k, max_size=n * k)), np.uint8).reshape(n, k)
    need = _lightest_best(tokens, values, usable)
    capacity = max(0, need + draw(st.sampled_from([-1, 0, 1, 5])), int(need * draw(st.sampled_from([1, 1.3]))))
    return tokens, values, usable, capacity


@settings(max_examples=500, deadline=None)
@given(_rows(), st.sampled_from([1, 0, 2, -1]))
def test_the_shortcut_gives_what_the_full_path_gives(rows, mode) -> None:
    tokens, values, usable, capacity = rows
    full = _solve(tokens, values, usable, capacity, False, mode)
    fast = _solve(tokens, values, usable, capacity, True, mode)
    info, b_info = full[0], fast[0]
    need = _lightest_best(tokens, values, usable)
    share = 1.25 if 1 in GRID_MODES else 0.8  # (AVX-512, and too few rows for the band's grid)
    taken, before_hulls = mode >= 0 and capacity >= need, need <= share * capacity  # (fewer than 64 rows: all sampled)
    if not taken:
        assert b_info == info
    elif before_hulls:
        assert (b_info[5], b_info[6], b_info[13]) == (-1, -1, 0)
    else:
        assert (b_info[5], b_info[6], b_info[13]) == (info[5], info[6], info[13])
    assert b_info[:5] == info[:5] and b_info[8:10] == info[8:10]  # lambda, bound, V*, W*; free rows, tie rule
    assert fast[1].tolist() == full[1].tolist() and fast[2].tolist() == full[2].tolist()  # choice, kept levels
    assert fast[3][: info[8]].tolist() == full[3][: info[8]].tolist()  # free rows
    if tokens.size and len(tokens) <= 6:
        expected, value, used = _raw_optimum(tokens, values, usable, capacity)
        assert fast[1].tolist() == expected and (b_info[3], b_info[4]) == (value, used)


def test_the_budget_that_just_fits_is_inclusive() -> None:
    """Row 0's best (value 9) is its lightest at 4 tokens, the first of two at 4 (level 1, not 2); row 1
    has no usable level; row 2's best ties at 5 tokens with a heavier level (kept, not chosen)."""
    tokens = np.array([[6, 4, 4], [1, 1, 1], [5, 8, 2]], np.int64)
    values = np.array([[9, 9, 9], [3, 3, 3], [7, 7, 1]], np.int64)
    usable = np.array([[1, 1, 1], [0, 0, 0], [1, 1, 1]], np.uint8)
    for grid in GRID_MODES:  # 9 of 9 tokens: after the hulls, or before them from AVX-512's bests (share 1.25)
        with _grid(grid):
            info, choice, keep, core = _solve(tokens, values, usable, 9, True)
        assert (info[3], info[4], info[5], info[6]) == (16, 9, *((-1, -1) if grid == 1 else (2, 4)))
        assert info[0] == 0 and info[2] == 16.0
        assert choice.tolist() == [1, -1, 0]
        assert keep.tolist() == [[1, 1, 1, 0], [0, 0, 0, 1], [1, 1, 0, 0]]
        assert core[: info[8]].tolist() == [0, 2]
    info, choice, _, _ = _solve(tokens, values, usable, 8, True)  # one token short: the full path
    assert info[7] > 0 and choice.tolist() == [1, -1, 2] and (info[3], info[4]) == (10, 6)
    info, choice, *_ = _solve(tokens, values, usable, 12, True)  # 9 <= 0.8 * 12: before the hulls
    assert (info[3], info[4], info[5], info[13]) == (16, 9, -1, 0) and choice.tolist() == [1, -1, 0]


@pytest.mark.parametrize(("level_tokens", "level_value"), [(-1, 5), (3, 0), (3, -2)])
def test_raw_levels_the_shortcut_cannot_trust_leave_it(level_tokens, level_value) -> None:
    """Raw arrays may offer a usable level with negative tokens or worth nothing: the full path
    answers (its hull counts are taken)."""
    tokens = np.array([[4, 2], [3, level_tokens]], np.int64)
    values = np.array([[8, 5], [6, level_value]], np.int64)
    usable = np.ones((2, 2), np.uint8)
    fast, full = _solve(tokens, values, usable, 100, True), _solve(tokens, values, usable, 100, False)
    assert fast[0] == full[0]  # hull counts too: the full path answered
    assert fast[1].tolist() == full[1].tolist()


def test_raw_values_whose_sum_passes_64_bits_leave_it() -> None:
    """Three raw values of 2**62 (scaled ones stay below 2**52 in all): the shortcut's sum would wrap;
    the full path answers, as it does without the shortcut."""
    tokens, values, usable = np.ones((3, 1), np.int64), np.full((3, 1), 2**62, np.int64), np.ones((3, 1), np.uint8)
    fast, full = _solve(tokens, values, usable, 10, True), _solve(tokens, values, usable, 10, False)
    assert fast[0] == full[0] and fast[1].tolist() == full[1].tolist()


def test_no_rows_and_a_budget_of_zero() -> None:
    empty = np.zeros((0, 3), np.int64)
    info, *_ = _solve(empty, empty, np.zeros((0, 3), np.uint8), 0, True)
    assert (info[3], info[4], info[8], info[9]) == (0, 0, 0, 1)
    tokens = np.array([[0, 2], [3, 0]], np.int64)  # levels free of tokens fit a budget of 0
    values = np.array([[9, 5], [4, 4]], np.int64)
    info, choice, keep, _ = _solve(tokens, values, np.ones((2, 2), np.uint8), 0, True)
    assert info[7] == 0 and choice.tolist() == [0, 1] and (info[3], info[4]) == (13, 0)
    assert keep.tolist() == [[1, 0, 0], [1, 1, 0]]  # row 1's other best (3 tokens) is kept, not chosen


@pytest.mark.parametrize("price", [0.0, 0.01])
def test_solve_arrays_and_the_engine_take_it_where_everything_fits(price) -> None:
    """A store that fits its window whole (every record at its most valuable level): solve_arrays and
    the engine's one call answer as the full kernel path does, and the job reports no hull counts."""
    rng = np.random.default_rng(5)
    tokens = rng.integers(1, 400, size=(300, 4))
    utility = rng.random((300, 4)) * 10
    utility[::7, 1] = utility[::7, 0]  # ties: two levels as valuable
    budget = int(tokens.max(axis=1).sum())
    inst = make_instance(tokens, utility, budget, price=price)
    full = kernel.solve_kernel(inst, scale(inst), shortcut=False)
    found = solve_arrays(tokens, utility, budget, price=price)
    assert found.status == "optimal" and found.choice.tolist() == full.choice.tolist()
    _, result, _ = kernel.solve_job(inst)
    assert result.hull_levels is None and result.choice.tolist() == full.choice.tolist()
    assert result.keep.tolist() == full.keep.tolist() and result.core.tolist() == full.core.tolist()
    assert (result.multiplier, result.value, result.tokens) == (full.multiplier, full.value, full.tokens)


@st.composite
def _scaled_rows(draw):
    """Float utilities with ties within rows (levels of equal utility, some of equal tokens), masks,
    rows with nothing offered, 1-8 levels, levels past the budget; the budget at, just below or up to
    1.3 times what the rows' most valuable levels take."""
    n = draw(st.integers(1, 40))
    k = draw(st.integers(1, 8))
    tokens = np.array(draw(st.lists(st.integers(0, 9), min_size=n * k, max_size=n * k)), np.int64).reshape(n, k)
    utility = np.array(draw(st.lists(st.sampled_from([0.5, 1.0, 2.5, 4.0]), min_size=n * k, max_size=n * k)),
                       float).reshape(n, k)
    mask = np.array(draw(st.lists(st.booleans(), min_size=n * k, max_size=n * k)), bool).reshape(n, k)
    inst = make_instance(tokens, utility, 10**6, mask=mask)
    scaled = scale(inst)
    need = _lightest_best(tokens, scaled.values, scaled.usable.view(np.uint8))
    budget = max(0, need + draw(st.sampled_from([-1, 0, 1])), int(need * draw(st.sampled_from([1.1, 1.3]))))
    return make_instance(tokens, utility, budget, mask=mask), need


@settings(max_examples=300, deadline=None)
@given(_scaled_rows())
def test_the_vector_bests_give_what_the_rows_loop_gives(rows) -> None:
    """Every grid mode (the vector pass with AVX-512, the rows' loop without) gives the full path's
    allocation, V*, W*, kept levels and free rows; where the bests fit and take more than 0.8 of the
    budget, AVX-512 answers before the hulls and the loop after them."""
    inst, need = rows
    full = kernel.solve_kernel(inst, scale(inst), shortcut=False)
    for mode in GRID_MODES:
        with _grid(mode):
            _, found, _ = kernel.solve_job(inst)
        assert found.choice.tolist() == full.choice.tolist() and found.keep.tolist() == full.keep.tolist()
        assert (found.value, found.tokens, found.multiplier) == (full.value, full.tokens, full.multiplier)
        assert found.core.tolist() == full.core.tolist()
        if need <= inst.budget and need > 0.8 * inst.budget:  # (fewer than 64 rows: all sampled)
            assert (found.hull_levels is None) == (mode == 1 and inst.k <= 8)


@pytest.mark.parametrize("grid", GRID_MODES)
def test_the_vector_share_is_taken_only_without_the_band(grid) -> None:
    """Bests taking 0.9 of the budget: before the hulls with AVX-512 at 1,000 records (every row would
    get a hull); at 5,000 the band's grid spares most hulls and the rows' bests are asked after it."""
    for n, before in ((1000, grid == 1), (5000, False)):
        rng = np.random.default_rng(n)
        tokens = rng.integers(1, 100, size=(n, 5))
        utility = rng.random((n, 5))
        best = tokens[np.arange(n), utility.argmax(axis=1)].sum()
        inst = make_instance(tokens, utility, int(best / 0.9))
        with _grid(grid):
            _, found, _ = kernel.solve_job(inst)
        full = kernel.solve_kernel(inst, scale(inst), shortcut=False)
        assert found.choice.tolist() == full.choice.tolist() and found.searched_rows == 0
        assert (found.hull_levels is None) == before
