"""The layers' Pareto merges (_kernel.c: merge_all): a layer's two shifted copies (nearly every merge on
memory-shaped rows, once the bound has cut a row's options) are merged with both cursors in registers,
more copies by merge_next; the search and the tie rule's tail take the points a chunk at a time (1,024 by
default), so a merge never holds a whole layer's points at once. However small the chunks, and whichever
way two copies merge, every output is the same: the allocation (the optimum search's own too, mode -1),
V*, W*, the multiplier and bound, kept levels, free rows and every count."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memsolve.solver import kernel, make_instance, native, scale

from .helpers import generated, instances, kernel_matches_exhaustive_search

KERNEL = native.module()
pytestmark = pytest.mark.skipif(KERNEL is None, reason="the compiled kernel is not built")


def _solve_in_chunks(points: int, inst, pairs: bool = True, **options):
    before = KERNEL.merge_chunk(points)
    KERNEL.merge_pairs(pairs)
    try:
        return kernel.solve_kernel(inst, scale(inst), **options)
    finally:
        KERNEL.merge_chunk(before)
        KERNEL.merge_pairs(True)


def _same(a, b) -> bool:
    fields = ("value", "tokens", "tie_rule", "multiplier", "upper_bound", "hull_levels", "lp_dominated",
              "searched_rows", "search_states", "states", "tail_rows", "hull_rows")
    return (a.choice.tolist() == b.choice.tolist() and a.keep.tolist() == b.keep.tolist()
            and a.core.tolist() == b.core.tolist() and all(getattr(a, f) == getattr(b, f) for f in fields))


@pytest.mark.parametrize("options", [{}, {"pareto_tail": True}, {"tighten_at_once": True}])
@pytest.mark.parametrize(("kind", "n"), [("memory", 300), ("memory", 2_000), ("uncorrelated", 400), ("ties", 300)])
def test_chunks_of_any_size_give_the_same_answer(kind, n, options) -> None:
    inst = generated(kind, n, 3)
    whole = _solve_in_chunks(0, inst, **options)
    assert whole is not None and whole.states > 7  # layers of many points: the chunks split them
    for points in (1, 2, 3, 7):
        assert _same(_solve_in_chunks(points, inst, **options), whole), points


def test_the_tail_merges_in_chunks_too() -> None:
    """Memory-shaped rows leave free records whose tie-rule tail runs by Pareto layers (values differ):
    its states are merged in chunks as the search's are."""
    inst = generated("memory", 2_000, 5)
    whole = _solve_in_chunks(0, inst)
    assert whole.tail_rows > 1 and whole.states > whole.search_states  # not vacuous: the tail ran
    assert _same(_solve_in_chunks(1, inst), whole)


def _search_alone(inst, pairs: bool):
    """The kernel's optimum search alone (mode -1: no reduction, no tie rule to reorder its allocation):
    its info and allocation."""
    n, k = inst.n, inst.k
    scaled = scale(inst)
    tokens, values = np.ascontiguousarray(inst.tokens, np.int64), np.ascontiguousarray(scaled.values, np.int64)
    usable = np.ascontiguousarray(scaled.usable).view(np.uint8)
    choice, keep, core = np.empty(n, np.int64), np.empty((n, k + 1), np.uint8), np.empty(n, np.int64)
    KERNEL.merge_pairs(pairs)
    try:
        info = KERNEL.solve(n, k, tokens, values, usable, inst.budget, choice, keep, core, -1)
    finally:
        KERNEL.merge_pairs(True)
    return info, choice.tolist()


@pytest.mark.parametrize("options", [{}, {"bounded_ties": False}, {"pareto_tail": True}])
@pytest.mark.parametrize(("kind", "n"), [("memory", 300), ("memory", 2_000), ("uncorrelated", 400), ("ties", 300)])
def test_two_copies_merge_as_merge_next_merges_them(kind, n, options) -> None:
    """merge_two against merge_next's scan for the same two copies: the same points in the same order
    (of equal points, the first copy's), so the same answer and counts, the search's own allocation too."""
    inst = generated(kind, n, 4)
    assert _same(_solve_in_chunks(0, inst, **options), _solve_in_chunks(0, inst, pairs=False, **options))
    assert _search_alone(inst, True) == _search_alone(inst, False)


def test_equal_points_of_two_copies_come_from_the_first_copy() -> None:
    """Small integer rows (levels of 1-3 tokens worth 1-3: many points of equal tokens and value in both
    copies): the search alone (mode -1, whose allocation follows the points' copies: no tie rule
    reorders it) gives the same allocation and counts with merge_two as with merge_next, on 400
    instances; the tie rule's answers (mode 1) too."""
    for seed in range(400):
        rng = np.random.default_rng(seed)
        n, k = int(rng.choice([20, 60, 200])), int(rng.integers(2, 6))
        tokens, values = rng.integers(1, 4, (n, k)), rng.integers(1, 4, (n, k))
        capacity = int(tokens.max(axis=1).sum() * rng.uniform(0.2, 0.8))
        for mode in (-1, 1):
            found = []
            for pairs in (True, False):
                choice, keep, core = np.empty(n, np.int64), np.empty((n, k + 1), np.uint8), np.empty(n, np.int64)
                KERNEL.merge_pairs(pairs)
                try:
                    info = KERNEL.solve(n, k, tokens, values, np.ones((n, k), np.uint8), capacity, choice, keep, core,
                                        mode)
                finally:
                    KERNEL.merge_pairs(True)
                found.append((info, choice.tolist(), keep.tolist()))
            assert found[0] == found[1], (seed, mode)


def test_the_hooks_restore_their_defaults() -> None:
    assert KERNEL.merge_chunk(5) == 1024
    assert KERNEL.merge_chunk(0) == 5
    assert KERNEL.merge_chunk(0) == 1024
    assert KERNEL.merge_chunk(2**40) == 1024 and KERNEL.merge_chunk(0) == 2**20  # (at most 2**20 points)
    assert KERNEL.merge_pairs(False) is False and KERNEL.merge_pairs(True) is True


@settings(max_examples=150, deadline=None)
@given(st.one_of(instances(max_n=6, max_k=3, integral=True), instances(max_n=6, max_k=3)))
def test_one_point_a_chunk_still_finds_the_tie_rule_optimum(inst) -> None:
    """Exhaustive search on small instances (no count limit: the kernel's own), with the merges handing
    over one point at a time."""
    inst = make_instance(inst.tokens, inst.utility, inst.budget, price=inst.price, mask=inst.mask)
    before = KERNEL.merge_chunk(1)
    try:
        kernel_matches_exhaustive_search(inst)
    finally:
        KERNEL.merge_chunk(before)


def test_a_budget_of_zero_in_any_chunk() -> None:
    """A budget of 0 with every level costing tokens: only deleting fits, and the search stops before
    any merge; the answer (keep nothing) does not depend on the chunk."""
    inst = generated("memory", 50, 2)
    zero = type(inst)(inst.tokens, inst.utility, inst.mask, 0, inst.price, inst.max_records)
    for points in (0, 1):
        result = _solve_in_chunks(points, zero)
        assert result is not None and (result.choice == -1).all() and result.value == 0
    assert _same(_solve_in_chunks(1, zero), _solve_in_chunks(0, zero))
