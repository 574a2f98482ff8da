"""memsolve.columns: records as columns, compiled and in Python, and the helpers the rules share."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import memsolve
from memsolve import columns
from memsolve.columns import Columns, distinct


@given(st.lists(st.integers(min_value=-3, max_value=40), max_size=60))
def test_distinct_is_numpys_unique(values: list[int]) -> None:
    array = np.array(values, dtype=np.int64)
    out = distinct(array)
    assert out.dtype == array.dtype and out.tolist() == np.unique(array).tolist()


def test_distinct_of_nothing_is_empty() -> None:
    assert distinct(np.array([], dtype=np.int32)).tolist() == []


_level = st.fixed_dictionaries({}, optional={"tokens": st.integers(0, 50), "utility": st.floats(0, 9),
                                             "text": st.sampled_from(["a b", "c d e", ""])})
_item = st.fixed_dictionaries(
    {"timestamp": st.integers(0, 100),
     "representations": st.dictionaries(st.sampled_from(["raw", "summary", "odd", "keywords"]), _level,
                                        min_size=1, max_size=3)},
    optional={"tenant": st.sampled_from(["t", "u"]), "store": st.sampled_from(["semantic", "working"]),
              "session": st.sampled_from(["s1", "s2"]), "key": st.sampled_from(["k1", "k2"]),
              "version": st.sampled_from(["v1", "v2"]), "document": st.sampled_from(["d"]),
              "ttl": st.one_of(st.none(), st.integers(0, 50)), "authority": st.booleans(),
              "text": st.sampled_from(["one two three", "x"])})


@settings(max_examples=150, deadline=None)
@given(st.lists(_item, max_size=12))
def test_the_compiled_columns_are_the_python_ones(items: list[dict]) -> None:
    """Columns.of and the level table from _scan.c (where built: CI builds it) equal the Python
    comprehensions': every array, code and value, a level named by no fidelity, tokens counted."""
    records = memsolve.load_records([{"id": f"r{i}", **item} for i, item in enumerate(items)]).valid
    assert columns._SCANS is not None or os.environ.get("MEMSOLVE_KERNEL") == "numpy"
    built = Columns.of(records, range(len(records)))
    table = built.levels(("raw", "summary", "keywords"), "words", lambda: lambda text: len(text.split()))
    saved = columns._SCANS
    columns._SCANS = None
    try:
        python = Columns.of(records, range(len(records)))
        python_table = python.levels(("raw", "summary", "keywords"), "words", lambda: lambda text: len(text.split()))
    finally:
        columns._SCANS = saved
    for name in ("index", "timestamp", "ttl", "ttl_given", "authority"):
        assert np.array_equal(getattr(built, name), getattr(python, name), equal_nan=name == "ttl"), name
        assert getattr(built, name).dtype == getattr(python, name).dtype, name
    for name in ("tenant", "store", "session", "key", "version", "document"):
        one, other = getattr(built, name), getattr(python, name)
        assert one.codes.tolist() == other.codes.tolist() and one.values == other.values and one.index == other.index
    assert built.time_kinds == python.time_kinds
    for name in ("tokens", "present", "unknown", "missing_utility"):
        assert np.array_equal(getattr(table, name), getattr(python_table, name)), name
    assert np.array_equal(table.utility, python_table.utility, equal_nan=True)


def test_records_built_by_hand_lay_out_as_the_python_loop_lays_them() -> None:
    """Values the loader never gives but a caller may build (levels as a list, a float token
    count, a truthy authority, two levels of one name with their own texts) read the same by
    the compiled loops as by the Python ones."""
    from memsolve.records import Level, Record

    records = (
        Record("a", 0, 1.0, [Level("raw", 2, 1.0), Level("summary", None, 0.5, "one two")], authority=1),  # type: ignore[arg-type]
        Record("b", 1, 2.0, (Level("raw", 2.0, 1.0),)),  # type: ignore[arg-type]
        Record("c", 2, 3.0, (Level("raw", None, 1.0, "x y z"), Level("raw", None, 2.0, "x")), text="a b c d"),
        Record("d", 3, 4.0, (Level("summary", None, None),), text="w w"),
    )
    words = lambda: lambda text: len(text.split())  # noqa: E731
    built = Columns.of(records, range(4))
    table = built.levels(("raw", "summary"), "words", words)
    saved = columns._SCANS
    columns._SCANS = None
    try:
        python = Columns.of(records, range(4))
        python_table = python.levels(("raw", "summary"), "words", words)
    finally:
        columns._SCANS = saved
    assert built.authority.tolist() == python.authority.tolist() == [True, False, False, False]
    for name in ("tokens", "present", "unknown", "missing_utility"):
        assert np.array_equal(getattr(table, name), getattr(python_table, name)), name
    assert np.array_equal(table.utility, python_table.utility, equal_nan=True)
    assert table.tokens.tolist() == [[2, 2], [2, 0], [1, 0], [0, 2]]  # the later level of a name wins its cell


def test_the_compiled_field_reads_are_python_attribute_reads() -> None:
    """_scan reads a slot directly only where Python would read that slot: a property, a
    __getattr__ of the type's own or an unset slot reads (or raises) as getattr does."""
    from memsolve import _scan

    class Slotted:
        __slots__ = ("tenant",)

        def __init__(self, tenant: object = None, set_it: bool = True) -> None:
            if set_it:
                self.tenant = tenant

    class Computed:
        @property
        def tenant(self) -> str:
            return "computed"

    class Fallback:
        def __getattr__(self, name: str) -> str:
            return "fallback"

    class Masked:
        __slots__ = ("tenant",)

        def __init__(self) -> None:
            self.tenant = "slot"

        def __getattribute__(self, name: str) -> object:
            return "masked" if name == "tenant" else object.__getattribute__(self, name)

    class Borrowing:  # another class's slot descriptor: Python refuses to read it through this one
        tenant = Slotted.__dict__["tenant"]

    mixed = (Slotted("a"), Computed(), Slotted("b"), Fallback(), Slotted(None), Slotted("a"), Masked())
    index: dict = {}
    assert list(np.frombuffer(_scan.codes(mixed, "tenant", index), dtype=np.int32)) == [0, 1, 2, 3, -1, 0, 4]
    assert list(index) == ["a", "computed", "b", "fallback", "masked"]
    with pytest.raises(AttributeError):
        _scan.codes((Slotted("a"), Slotted(set_it=False)), "tenant", {})
    with pytest.raises(TypeError, match="doesn't apply"):
        _scan.codes((Borrowing(),), "tenant", {})


@given(st.lists(st.integers(min_value=-2, max_value=300), max_size=80), st.sampled_from([np.int32, np.int64, np.intp]))
def test_groups_and_ranks_are_numpys_unique(values: list[int], dtype: type) -> None:
    """columns.groups / renumbered: np.unique's first rows and inverse, by counts where the codes
    are small and non-negative (most draws here), by numpy's sort otherwise."""
    codes = np.array(values, dtype=dtype)
    _, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
    got_first, got_inverse = columns.groups(codes)
    assert got_first.tolist() == first.tolist() and got_inverse.tolist() == inverse.ravel().tolist()
    assert columns.renumbered(codes).tolist() == inverse.ravel().tolist()


def test_groups_of_wide_codes_and_of_floats_take_numpys_sort() -> None:
    wide = np.array([10**9, 3, 10**9, 0], dtype=np.int64)
    assert [a.tolist() for a in columns.groups(wide)] == [[3, 1, 0], [2, 1, 2, 0]]
    assert columns.renumbered(np.array([2.5, -1.0, 2.5])).tolist() == [1, 0, 1]
