"""Context: flags, records file and policy; any disagreement is an input error."""

from __future__ import annotations

import pytest

import memsolve

from .conftest import make_policy, outcome, rec, solve


def test_budget_from_each_source_and_conflicts() -> None:
    records = {"records": [rec("a", tokens=3)], "now": 1, "budget": 3}
    assert outcome(solve(make_policy(), records)) == {"a": "raw"}
    assert outcome(solve(make_policy(), records, budget=3)) == {"a": "raw"}
    with pytest.raises(memsolve.InputError, match="conflicting budget: the caller says `2`, the records file says `3`"):
        solve(make_policy(), records, budget=2)
    with pytest.raises(memsolve.InputError, match="conflicting budget") as info:
        solve(make_policy("budget: {tokens: 5}\n"), records)
    assert info.value.line == 4  # points at the policy's budget.tokens


def test_a_count_limit_written_as_a_float_is_one_error_not_a_crash() -> None:
    # the schemas' "integer" admits 1.0; found by the fuzzed-policy test: it failed inside the solver
    records = [rec("a", tokens=1), rec("b", tokens=1)]
    with pytest.raises(memsolve.InputError, match="max_records must be an integer >= 0, got `1.0`"):
        solve(make_policy("budget: {tokens: 5, max_records: 1.0}\n"), records, now=1)
    with pytest.raises(memsolve.InputError, match="max_records must be an integer"):
        solve(make_policy("budget: {tokens: 5}\n"), {"records": records, "now": 1, "max_records": 2.0})
    assert len(solve(make_policy("budget: {tokens: 5, max_records: 1}\n"), records, now=1).selected) == 1


def test_missing_budget() -> None:
    with pytest.raises(memsolve.InputError, match="no token budget"):
        solve(make_policy(), [rec("a")], now=1)


def test_zero_budget_selects_only_free_levels() -> None:
    records = [rec("paid", tokens=1, utility=5), rec("free", tokens=0, utility=1)]
    result = solve(make_policy(), records, now=1, budget=0)
    assert outcome(result) == {"paid": "dropped", "free": "raw"}
    assert result.dropped[0].reason == "no level fits the budget of 0 tokens"
    assert result.price.queue_after == 0.0


def test_empty_input() -> None:
    result = solve(make_policy(), [], budget=10)
    assert result.selected == () and result.objective == 0.0 and result.tokens_used == 0


def test_now_is_required_for_plain_numbers() -> None:
    with pytest.raises(memsolve.InputError, match="`now` is required"):
        solve(make_policy(), [rec("a")], budget=1)


def test_rfc3339_times_and_durations() -> None:
    policy = make_policy("budget: {tokens: 10}\n", rules="- freshness: {default_ttl: 24h}\n- max_age: 7d\n")
    records = [
        rec("fresh", timestamp="2026-11-29T12:00:00Z"),
        rec("exactly-24h", timestamp="2026-11-29T10:00:00+00:00"),
        rec("stale", timestamp="2026-11-29T09:59:59Z"),
        rec("own-ttl", timestamp="2026-11-20T10:00:00Z", ttl="90m"),
    ]
    result = solve(policy, records, now="2026-11-30T10:00:00Z")
    assert outcome(result) == {"fresh": "raw", "exactly-24h": "raw", "stale": "freshness", "own-ttl": "freshness"}
    assert [r.passed for r in result.entry("own-ttl").rules] == [True, False, False]  # tenant, freshness, max-age
    evidence = result.entry("stale").rules[1].evidence
    assert evidence["ttl"] == "1d" and evidence["now"] == "2026-11-30T10:00:00Z"


def test_numeric_duration_with_rfc3339_times_is_an_error_at_the_policy_line() -> None:
    policy = make_policy("budget: {tokens: 10}\n", rules="- max_age: 48\n")
    with pytest.raises(memsolve.InputError, match="need a unit") as info:
        solve(policy, [rec("a", timestamp="2026-11-29T12:00:00Z")], now="2026-11-30T10:00:00Z")
    assert info.value.line == 6


def test_now_kind_must_match_records() -> None:
    with pytest.raises(memsolve.InputError, match="mixed time kinds"):
        solve(make_policy("budget: {tokens: 1}\n"), [rec("a", timestamp=1)], now="2026-11-30T10:00:00Z")


def test_missing_now_with_rfc3339_is_the_current_time() -> None:
    result = solve(make_policy("budget: {tokens: 1}\n"), [rec("a", timestamp="2020-01-01T00:00:00Z")])
    assert isinstance(result.now, str) and result.now.endswith("Z")


def test_policy_context_now_and_session() -> None:
    policy = make_policy("budget: {tokens: 5}\ncontext: {now: 10, session: s1}\n",
                         rules="- sessions: {include_previous: false}\n")
    assert outcome(solve(policy, [rec("a", session="s1"), rec("b", session="s0")])) == {"a": "raw", "b": "sessions"}
    with pytest.raises(memsolve.InputError, match="conflicting now"):
        solve(policy, [rec("a", session="s1")], now=11)


@pytest.mark.parametrize(("field", "value", "message"), [
    ("max_records", -3, "max_records must be an integer >= 0"),
    ("max_records", "z", "max_records must be an integer >= 0"),
    ("budget", True, "budget must be an integer >= 0"),
    ("current_versions", ["a", "b"], "current_versions must map document names to version strings"),
    ("tenant", 7, "tenant must be a string"),
])
def test_a_callers_wrong_types_are_input_errors(field: str, value: object, message: str) -> None:
    with pytest.raises(memsolve.InputError, match=message):
        solve(make_policy("budget: {tokens: 5}\n"), [rec("a")], now=1, **{field: value})
