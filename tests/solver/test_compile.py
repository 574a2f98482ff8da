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
