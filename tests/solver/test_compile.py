"""Compile: fidelity order, token counting, monotonicity repair with a trace."""

from __future__ import annotations

from ..conftest import make_policy, solve


def test_monotonicity_repair_is_applied_and_traced() -> None:
    records = [{"id": "a", "timestamp": 0, "representations": {
        "raw": {"tokens": 10, "utility": 2.0},
        "summary": {"tokens": 4, "utility": 5.0},
        "keywords": {"tokens": 1, "utility": 1.0}}}]
    result = solve(make_policy("budget: {tokens: 10}\n"), records, now=0)
    entry = result.entry("a")
    assert [r.to_dict() for r in entry.allocation.repairs] == [{"level": "raw", "utility_from": 2.0, "utility_to": 5.0}]
    # equal value at raw and summary: the tie rule takes fewer tokens
    assert [(s.level, s.utility) for s in result.selected] == [("summary", 5.0)]
    offered = [o.to_dict() for o in entry.allocation.offered]
    assert [o["level"] for o in offered] == ["raw", "summary", "keywords"]


def test_levels_follow_the_policy_fidelity_order() -> None:
    policy = make_policy("budget: {tokens: 10}\nfidelity: [summary, raw]\n")
    records = [{"id": "a", "timestamp": 0, "representations": {
        "raw": {"tokens": 3, "utility": 1.0}, "summary": {"tokens": 3, "utility": 2.0}}}]
    result = solve(policy, records, now=0)
    assert result.selected[0].level == "summary"
    assert [o.level for o in result.entry("a").allocation.offered] == ["summary", "raw"]


def test_values_below_the_resolution_say_so_and_larger_ones_enter() -> None:
    records = [{"id": "tiny", "timestamp": 0, "tokens": 1, "utility": 1e-7},
               {"id": "small", "timestamp": 0, "tokens": 1, "utility": 1e-5},
               {"id": "one", "timestamp": 0, "tokens": 1, "utility": 1.0}]
    result = solve(make_policy("budget: {tokens: 10}\n"), records, now=0)
    assert [s.id for s in result.selected] == ["small", "one"]  # free budget: every value above it enters
    (dropped,) = result.dropped
    assert dropped.id == "tiny" and "below the solver's resolution of 5e-07" in dropped.reason


def test_utilities_at_the_documented_maximum_solve_and_above_it_are_refused() -> None:
    import pytest

    import memsolve

    many = [{"id": f"r{i}", "timestamp": 0, "tokens": 1, "utility": 1e15} for i in range(1000)]
    result = solve(make_policy("budget: {tokens: 2000}\n"), many, now=0)
    assert len(result.selected) == 1000 and result.objective == 1e18
    with pytest.raises(memsolve.InputError, match=r"\[0\]\.utility: expected a number <= 1e\+?15"):
        solve(make_policy("budget: {tokens: 5}\n"), [{"id": "x", "timestamp": 0, "tokens": 1, "utility": 1.7e308}],
              now=0)
    with pytest.raises(memsolve.InputError, match="utilities must be finite, >= 0 and <= 1e"):
        memsolve.solve_arrays([[1]], [[1e300]], 5)
