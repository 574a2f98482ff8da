"""memsolve.columns: the helpers the rules share."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from memsolve.columns import distinct


@given(st.lists(st.integers(min_value=-3, max_value=40), max_size=60))
def test_distinct_is_numpys_unique(values: list[int]) -> None:
    array = np.array(values, dtype=np.int64)
    out = distinct(array)
    assert out.dtype == array.dtype and out.tolist() == np.unique(array).tolist()


def test_distinct_of_nothing_is_empty() -> None:
    assert distinct(np.array([], dtype=np.int32)).tolist() == []
