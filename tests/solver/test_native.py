"""memsolve.solver.native: MEMSOLVE_KERNEL=numpy switches the compiled kernel off for the calls made
while it is set, however it is set (os.environ, monkeypatch, any case), and on again once unset."""

from __future__ import annotations

import dataclasses
import os
from unittest import mock

import numpy as np
import pytest

from memsolve.solver import ArraySolution, native, solve_arrays


@pytest.mark.skipif(not native.built(), reason="the compiled kernel is not built")
def test_the_switch_is_read_at_every_call(monkeypatch) -> None:
    monkeypatch.delenv("MEMSOLVE_KERNEL", raising=False)
    assert native.enabled() and native.module() is not None
    for value, on in (("numpy", False), ("NumPy", False), ("", True), ("c", True)):
        monkeypatch.setenv("MEMSOLVE_KERNEL", value)
        assert native.enabled() is on and (native.module() is not None) is on
    os.environ["MEMSOLVE_KERNEL"] = "numpy"
    try:
        assert not native.enabled()
    finally:
        del os.environ["MEMSOLVE_KERNEL"]
    assert native.enabled()
    with mock.patch("os.environ", {"MEMSOLVE_KERNEL": "numpy"}):  # a replaced mapping is read as it is
        assert not native.enabled()
    with mock.patch("os.environ", {}):
        assert native.enabled()


def test_the_one_call_answer_is_a_frozen_array_solution(monkeypatch) -> None:
    """solve_arrays' answer from the kernel's one call is the dataclass the numpy path gives, equal
    field by field, and as frozen."""
    tokens, utility = np.array([[5, 2], [4, 1]], np.int64), np.array([[3.0, 2.0], [4.0, 1.0]])
    fast = solve_arrays(tokens, utility, 6)
    monkeypatch.setenv("MEMSOLVE_KERNEL", "numpy")
    slow = solve_arrays(tokens, utility, 6)
    assert type(fast) is type(slow) is ArraySolution
    assert fast.choice.tolist() == slow.choice.tolist() == [1, 0]
    assert (fast.objective, fast.tokens_used, fast.status, fast.bound, fast.engine) == (
        slow.objective, slow.tokens_used, slow.status, slow.bound, slow.engine)
    with pytest.raises(AttributeError):
        fast.objective = 0.0
    # its fields written at once are the dataclass's, every one (a field added later must be written too)
    assert list(vars(fast)) == [field.name for field in dataclasses.fields(ArraySolution)]
    assert dataclasses.replace(fast).tokens_used == fast.tokens_used and repr(fast).startswith("ArraySolution(")
