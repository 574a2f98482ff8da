"""The kernel's first passes (hulls, the LP split, the floor, each row's gap and tied options) take
shortcuts: a row after one whose levels came in no order goes straight to the sorted hull, the
floor's tokens come from the split, and reduced values are taken in 64 bits where no product
overflows (else in 128). Each must give what the long way gives: the exhaustive tie-rule optimum,
the dense DP's allocation, numpy's hull counts and LP."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from memsolve.solver import kernel, make_instance, native, scale
from memsolve.solver.dp import solve_dp


def _raw_optimum(tokens, values, usable, capacity):
    """The tie rule over raw kernel arrays by exhaustive search: most value, then fewest tokens,
    then earlier rows at higher fidelity (level 0 first, delete last)."""
    n, k = tokens.shape
    options = [[o for o in range(k) if usable[i, o]] + [k] for i in range(n)]
    best, best_key = None, None
    for choice in itertools.product(*options):
        w = sum(int(tokens[i, o]) for i, o in enumerate(choice) if o < k)
        if w > capacity:
            continue
        v = sum(int(values[i, o]) for i, o in enumerate(choice) if o < k)
        key = (v, -w, tuple(-o for o in choice))
        if best_key is None or key > best_key:
            best, best_key = choice, key
    return [o if o < k else -1 for o in best], best_key[0], -best_key[1]


@st.composite
def _raw_rows(draw):
    """Rows in fidelity order (lighter and less valuable down the levels) or in no order, values
    up to 2**52 and tokens up to 2**34 (q * v overflows 64 bits) or small, some levels of 2**45
    tokens (usable, never fitting) in rows that are otherwise in order, zero tokens, masks."""
    n = draw(st.integers(1, 6))
    k = draw(st.integers(1, 4))
    big = draw(st.booleans())
    w_top, v_top = (2**34, 2**52) if big else (40, 60)
    tokens = np.zeros((n, k), dtype=np.int64)
    values = np.zeros((n, k), dtype=np.int64)
    for i in range(n):
        kind = draw(st.sampled_from(["ordered", "ordered", "random", "huge"]))
        w = draw(st.lists(st.integers(0 if kind == "random" else 1, w_top), min_size=k, max_size=k, unique=True))
        v = draw(st.lists(st.integers(1, v_top), min_size=k, max_size=k, unique=True))
        if kind != "random":  # level 0 heaviest and most valuable
            w, v = sorted(w, reverse=True), sorted(v, reverse=True)
        if kind == "huge":
            w[0] = 2**45 + w[0]
        tokens[i], values[i] = w, v
    usable = np.array(draw(st.lists(st.booleans(), min_size=n * k, max_size=n * k)), dtype=np.uint8).reshape(n, k)
    usable[tokens > 2**40] = 1
    light = int(np.where(tokens < 2**40, tokens, 0).max(axis=1).sum())
    capacity = draw(st.integers(0, max(light, 1)))
    return tokens, values, usable, capacity


@settings(max_examples=600, deadline=None)
@given(_raw_rows())
def test_the_first_passes_keep_the_exhaustive_optimum_on_raw_arrays(rows) -> None:
    tokens, values, usable, capacity = rows
    module = native.module()
    n, k = tokens.shape
    choice, keep, core = np.empty(n, np.int64), np.empty((n, k + 1), np.uint8), np.empty(n, np.int64)
    info = module.solve(n, k, tokens, values, usable, capacity, choice, keep, core, 1)
    assert info is not None
    expected, value, used = _raw_optimum(tokens, values, usable, capacity)
    assert (int(info[3]), int(info[4])) == (value, used)
    assert info[9] == 1  # the tie rule applied
    assert choice.tolist() == expected
    assert info[2] * (1 + 1e-12) >= value  # the LP bound


def _mixed(n: int, seed: int, kind: str):
    """Runs of rows in fidelity order (the hull's fast path) between rows in no order."""
    rng = np.random.default_rng(seed)
    tokens = rng.integers(1, 200, size=(n, 5))
    if kind == "strong":
        utility = tokens + 10.0
    else:
        utility = rng.integers(1, 200, size=(n, 5)).astype(float)
    ordered = rng.random(n) < 0.6
    tokens[ordered] = -np.sort(-tokens[ordered], axis=1)
    utility[ordered] = -np.sort(-utility[ordered], axis=1)
    mask = rng.random((n, 5)) < 0.9
    budget = int(tokens.min(axis=1).sum() + rng.integers(0, tokens.max(axis=1).sum() - tokens.min(axis=1).sum()))
    return make_instance(tokens, utility, budget, mask=mask)


@settings(max_examples=60, deadline=None)
@given(st.integers(20, 300), st.integers(0, 2**31), st.sampled_from(["strong", "uncorrelated"]))
def test_rows_in_and_out_of_order_give_the_dense_dp_allocation_and_numpy_hulls(n, seed, kind) -> None:
    from memsolve.solver.reduce import relax

    inst = _mixed(n, seed, kind)
    scaled = scale(inst)
    result = kernel.solve_kernel(inst, scaled, shortcut=False)  # hulls counted
    assert result is not None
    lp = relax(inst, scaled)
    assert (result.hull_levels, result.lp_dominated) == (lp.hull_levels, lp.lp_dominated)
    assert result.multiplier == lp.multiplier
    dense = solve_dp(inst, scaled)
    assert result.value == dense.scaled_objective
    if result.tie_rule:
        assert result.choice.tolist() == dense.choice.tolist()


def test_boundaries() -> None:
    """No rows, a zero budget, one row, one level."""
    module = native.module()
    for n, k, capacity in [(0, 3, 10), (3, 2, 0), (1, 4, 7), (4, 1, 5)]:
        rng = np.random.default_rng(n * 10 + k)
        tokens = rng.integers(1, 9, size=(n, k)).astype(np.int64)
        values = rng.integers(1, 20, size=(n, k)).astype(np.int64)
        usable = np.ones((n, k), np.uint8)
        choice, keep, core = np.empty(n, np.int64), np.empty((n, k + 1), np.uint8), np.empty(n, np.int64)
        info = module.solve(n, k, tokens, values, usable, capacity, choice, keep, core, 1)
        expected, value, used = _raw_optimum(tokens, values, usable, capacity)
        assert (int(info[3]), int(info[4])) == (value, used)
        assert choice.tolist() == expected


def test_the_wide_split_equals_the_numpy_relaxation() -> None:
    """Past 65,536 increments the split samples 256 of them: memory-shaped rows (increments of 1 to
    2,000 tokens) at budgets from 1 % to 99 % of the heaviest levels' tokens give numpy's LP."""
    import sys
    from pathlib import Path

    from memsolve.solver.reduce import relax

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from generators import memory

    tokens, utility, _ = memory(30_000, 7)
    for share in (0.01, 0.25, 0.6, 0.99):
        inst = make_instance(tokens, utility, int(tokens[:, 0].sum() * share))
        scaled = scale(inst)
        result = kernel.solve_kernel(inst, scaled)
        assert result is not None and result.tie_rule
        lp = relax(inst, scaled)
        assert result.multiplier == lp.multiplier
        assert abs(result.upper_bound - lp.upper_bound) <= 1e-9 * abs(lp.upper_bound) + 1


def test_a_block_of_equal_efficiencies_wider_than_the_splits_rounds() -> None:
    """Levels of 1, 2, 4 or 8 tokens worth 3 or 5 a token: every row's hull increments come in two
    efficiencies, thousands of each. Where every row gets a hull (band mode 0) the LP split's rounds meet
    a range all in one band (no progress: quickselect takes it, from the range as the round found it);
    the allocation is the dense DP's, the multiplier and bound numpy's."""
    from memsolve.solver.reduce import relax

    module = native.module()
    rng = np.random.default_rng(0)
    n, k = 700, 8
    tokens = rng.choice([1, 2, 4, 8], (n, k)).astype(np.int64)
    values = tokens * rng.choice([3, 5], (n, k))
    inst = make_instance(tokens, values.astype(float), int(tokens.max(axis=1).sum() * 0.9))
    scaled = scale(inst)
    choice, keep, core = np.empty(n, np.int64), np.empty((n, k + 1), np.uint8), np.empty(n, np.int64)
    info = module.solve(n, k, tokens, np.ascontiguousarray(scaled.values, np.int64),
                        np.ascontiguousarray(scaled.usable).view(np.uint8), inst.budget, choice, keep, core, 1,
                        False, 0, False)
    assert info[13] == n  # every row got a hull: the split ran over all their increments
    lp = relax(inst, scaled)
    assert info[0] / info[1] == lp.multiplier and abs(info[2] - lp.upper_bound) <= 1e-9 * lp.upper_bound
    dense = solve_dp(inst, scaled)
    assert info[3] == dense.scaled_objective and choice.tolist() == dense.choice.tolist()
