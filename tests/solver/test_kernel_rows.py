"""The kernel's row-by-row shortcuts: the levels kept by the reduction written as one word per
record (where records are visited in order and k + 1 <= 8, else flag by flag), the vertices of
each row's hull taken from its levels (no copy of their tokens and values), the tail's suffix
sums taken from the last free record back, the lead taken in the reduction's pass where the
optimum is worth the bound, and the scaling's rounding by one instruction. Each
must give what the definitions give: every level whose Lagrangian bound reaches the optimum, and
numpy's rounding (halves to even)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from memsolve.solver import make_instance, native, scale
from memsolve.solver.instance import MAX_SCALE

from .test_kernel_passes import _raw_optimum


def _kept_by_the_bound(tokens, values, usable, info) -> np.ndarray:
    """keep by its definition: level o of row r (delete: column k) can be in an allocation worth
    (V*, W*) iff q v_o - p w_o >= best_r - slack, where best_r is the row's best reduced value and
    slack = sum of the bests - (q V* - p W*) (the capacity's terms cancel)."""
    n, k = tokens.shape
    p, q, value, used = int(info[0]), int(info[1]), int(info[3]), int(info[4])
    reduced = [[q * int(values[i, o]) - p * int(tokens[i, o]) if usable[i, o] else None for o in range(k)] + [0]
               for i in range(n)]
    best = [max(r for r in row if r is not None) for row in reduced]
    slack = sum(best) - (q * value - p * used)
    keep = np.zeros((n, k + 1), dtype=bool)
    for i in range(n):
        for o, r in enumerate(reduced[i]):
            keep[i, o] = r is not None and r >= best[i] - slack
    return keep


@st.composite
def _rows(draw):
    """k from 1 to 10 (one word per record up to 7 levels), strongly correlated rows (every row a
    candidate: visited in order) or random ones, in fidelity order or not, masks, any budget."""
    n = draw(st.integers(1, 40))
    k = draw(st.integers(1, 10))
    seed = draw(st.integers(0, 2**31))
    kind = draw(st.sampled_from(["strong", "random", "ordered"]))
    rng = np.random.default_rng(seed)
    tokens = rng.integers(1, 60, size=(n, k)).astype(np.int64)
    values = tokens + 7 if kind == "strong" else rng.integers(1, 90, size=(n, k)).astype(np.int64)
    if kind == "ordered":
        tokens, values = -np.sort(-tokens, axis=1), -np.sort(-values, axis=1)
    usable = (rng.random((n, k)) < 0.85).astype(np.uint8)
    capacity = int(rng.integers(0, int(tokens.max(axis=1).sum()) + 2))
    return np.ascontiguousarray(tokens), np.ascontiguousarray(values), usable, capacity


@settings(max_examples=400, deadline=None)
@given(_rows(), st.sampled_from([1, 0, 2]))
def test_keep_is_every_level_the_bound_allows(rows, mode) -> None:
    tokens, values, usable, capacity = rows
    module = native.module()
    n, k = tokens.shape
    choice, keep, core = np.empty(n, np.int64), np.full((n, k + 1), 7, np.uint8), np.empty(n, np.int64)
    info = module.solve(n, k, tokens, values, usable, capacity, choice, keep, core, mode)
    assert info is not None
    assert keep.view(bool).tolist() == _kept_by_the_bound(tokens, values, usable, info).tolist()
    assert keep.max() <= 1  # every byte written, none past a row's flags
    free = np.flatnonzero(keep.sum(axis=1) > 1)
    assert core[: int(info[8])].tolist() == free.tolist()


def test_keep_one_word_per_record_up_to_the_last_byte() -> None:
    """Strongly correlated rows at every k + 1 <= 8 and n around the word's reach: the last rows'
    flags are written byte by byte, none past the array (a guard byte after it stays)."""
    module = native.module()
    for k in range(1, 9):
        for n in range(1, 12):
            rng = np.random.default_rng(100 * k + n)
            tokens = rng.integers(1, 30, size=(n, k)).astype(np.int64)
            values = tokens + 5
            usable = np.ones((n, k), np.uint8)
            capacity = int(tokens.sum(axis=1).mean() * n // k) + 1
            buffer = np.full(n * (k + 1) + 8, 9, np.uint8)
            keep = buffer[: n * (k + 1)].reshape(n, k + 1)
            choice, core = np.empty(n, np.int64), np.empty(n, np.int64)
            info = module.solve(n, k, tokens, values, usable, capacity, choice, keep, core, 1)
            assert keep.view(bool).tolist() == _kept_by_the_bound(tokens, values, usable, info).tolist()
            assert (buffer[n * (k + 1):] == 9).all()


@settings(max_examples=400, deadline=None)
@given(st.integers(1, 6), st.integers(1, 4), st.integers(0, 2**31), st.integers(0, 3))
def test_correlated_rows_where_the_lead_is_taken_with_the_reduction(n, k, seed, shift) -> None:
    """Values a constant above the tokens (every option tied at lambda where the optimum is worth
    the bound: the lead taken in the reduction's pass) against the exhaustive tie rule."""
    module = native.module()
    rng = np.random.default_rng(seed)
    tokens = rng.integers(1, 12, size=(n, k)).astype(np.int64)
    values = tokens + 3 + shift * rng.integers(0, 2, size=(n, k))
    usable = (rng.random((n, k)) < 0.9).astype(np.uint8)
    for capacity in {0, int(tokens.min(axis=1).sum()), int(tokens.sum() // 2), int(tokens.max(axis=1).sum())}:
        choice, keep, core = np.empty(n, np.int64), np.empty((n, k + 1), np.uint8), np.empty(n, np.int64)
        info = module.solve(n, k, tokens, values, usable, capacity, choice, keep, core, 1)
        expected, value, used = _raw_optimum(tokens, values, usable, capacity)
        assert (int(info[3]), int(info[4])) == (value, used)
        assert info[9] == 1
        assert choice.tolist() == expected
        assert keep.view(bool).tolist() == _kept_by_the_bound(tokens, values, usable, info).tolist()


def _halves(count: int, sign: float) -> np.ndarray:
    """Utilities u with u * 10**6 exactly a half (m + 0.5), where the rounding must go to even."""
    m = np.arange(1, 4 * count)
    u = (m + 0.5) / MAX_SCALE
    exact = u * MAX_SCALE == m + 0.5
    return sign * u[exact][:count]


def test_the_scaling_rounds_halves_to_even_as_numpy() -> None:
    module = native.module()
    n, k = 60, 5
    rng = np.random.default_rng(3)
    tokens = rng.integers(1, 50, size=(n, k)).astype(np.int64)
    utility = _halves(n * k, 1.0).reshape(n, k) + 0.0
    assert utility.size == n * k
    for price, scale_up in [(0.0, 1.0), (0.0, 2.0**40), (1e-7, 1.0)]:
        inst = make_instance(tokens, utility * scale_up, int(tokens.sum()), price=price)
        scaled = scale(inst)
        net = inst.utility - price * inst.tokens
        expected = np.rint(net * scaled.scale).astype(np.int64)
        assert scaled.values.tolist() == expected.tolist()
        values, usable = np.empty((n, k), np.int64), np.empty((n, k), np.uint8)
        choice, keep, core = np.empty(n, np.int64), np.empty((n, k + 1), np.uint8), np.empty(n, np.int64)
        module.solve_job(n, k, inst.tokens, inst.utility, inst.mask.view(np.uint8), inst.budget, price, 1,
                         values, usable, choice, keep, core)
        assert values.tolist() == expected.tolist()
        assert usable.view(bool).tolist() == (expected > 0).tolist()
