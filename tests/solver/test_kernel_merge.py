"""The layers' Pareto merges (_kernel.c: merge_all): a layer's two shifted copies (nearly every merge on
memory-shaped rows, once the bound has cut a row's options) are merged with both cursors in registers,
more copies by merge_next; the search and the tie rule's tail take the points a chunk at a time (1,024 by
default), so a merge never holds a whole layer's points at once. However small the chunks, every output
is the same: the allocation, V*, W*, kept levels, free rows and every count."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memsolve.solver import kernel, make_instance, native, scale

from .helpers import generated, instances, kernel_matches_exhaustive_search

KERNEL = native.module()
pytestmark = pytest.mark.skipif(KERNEL is None, reason="the compiled kernel is not built")


def _solve_in_chunks(points: int, inst, **options):
    before = KERNEL.merge_chunk(points)
    try:
        return kernel.solve_kernel(inst, scale(inst), **options)
    finally:
        KERNEL.merge_chunk(before)


def _same(a, b) -> bool:
    fields = ("value", "tokens", "tie_rule", "search_states", "states", "searched_rows", "tail_rows")
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


def test_the_default_chunk_is_restored() -> None:
    assert KERNEL.merge_chunk(5) == 1024
    assert KERNEL.merge_chunk(0) == 5
    assert KERNEL.merge_chunk(0) == 1024


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


def test_an_empty_layer_merges_to_nothing() -> None:
    """A budget of 0 with every level costing tokens: only the delete option fits; the answer is to keep
    nothing, in chunks of one as in the default."""
    inst = generated("memory", 50, 2)
    zero = type(inst)(inst.tokens, inst.utility, inst.mask, 0, inst.price, inst.max_records)
    for points in (0, 1):
        result = _solve_in_chunks(points, zero)
        assert result is not None and (result.choice == -1).all() and result.value == 0
    assert np.array_equal(_solve_in_chunks(1, zero).keep, _solve_in_chunks(0, zero).keep)
