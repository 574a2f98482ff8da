"""Each rule at its boundaries; every rule evaluated for every record; first failure decides."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

import memsolve
from memsolve.policies.rules import same

from ..conftest import make_policy, outcome, rec, solve

BUDGET = "budget: {tokens: 100}\n"


def verdicts(result: memsolve.Result, record_id: str) -> dict:
    return {r.rule: r for r in result.entry(record_id).rules}


# --- freshness --------------------------------------------------------------------------


def test_freshness_is_inclusive_at_exactly_ttl() -> None:
    policy = make_policy(BUDGET, rules="- freshness: {}\n")
    records = [rec("at-ttl", timestamp=7, ttl=3), rec("past-ttl", timestamp=6.999, ttl=3)]
    result = solve(policy, records, now=10)
    assert outcome(result) == {"at-ttl": "raw", "past-ttl": "freshness"}
    assert verdicts(result, "past-ttl")["freshness"].evidence["ttl_from"] == "record"


def test_freshness_ttl_sources_record_then_store_then_default() -> None:
    policy = make_policy(
        BUDGET, rules="- freshness: {default_ttl: 5, ttl_by_store: {working: 1}}\n"
    )
    records = [
        rec("null-ttl", timestamp=0, ttl=None, store="working"),  # explicit null: never expires
        rec("by-store", timestamp=8, store="working"),  # age 2 > 1
        rec("by-default", timestamp=5, store="semantic"),  # age 5 == 5, fresh
        rec("default-expired", timestamp=4, store="semantic"),  # age 6 > 5
    ]
    result = solve(policy, records, now=10)
    assert outcome(result) == {"null-ttl": "raw", "by-store": "freshness",
                               "by-default": "raw", "default-expired": "freshness"}
    assert verdicts(result, "by-store")["freshness"].evidence["ttl_from"] == "store `working`"


def test_rows_share_a_verdict_only_where_it_would_read_the_same() -> None:
    # the same moment, store and timestamp: a record's own `ttl: null` (never expires) and one
    # without a ttl (the store's) must not share the freshness verdict the two would have in common
    policy = make_policy(BUDGET, rules="- freshness: {ttl_by_store: {working: 1}}\n- stores: {allow: [working]}\n")
    records = [rec("own-null", timestamp=5, ttl=None, store="working"), rec("by-store", timestamp=5, store="working"),
               rec("by-store-too", timestamp=5, store="working")]
    result = solve(policy, records, now=10)
    assert outcome(result) == {"own-null": "raw", "by-store": "freshness", "by-store-too": "freshness"}
    assert verdicts(result, "own-null")["freshness"].evidence["ttl_from"] == "record"
    same = [verdicts(result, rid) for rid in ("by-store", "by-store-too")]
    assert not same[0]["freshness"].passed and same[0]["freshness"].evidence["ttl_from"] == "store `working`"
    assert same[0]["freshness"] is same[1]["freshness"]  # one verdict, written once in the trace
    assert verdicts(result, "own-null")["stores"] is same[0]["stores"]


def test_a_shared_verdict_as_data_is_each_rows_own_copy() -> None:
    policy = make_policy(BUDGET, rules="- stores: {allow: [semantic]}\n")
    result = solve(policy, [rec(f"r{i}", store="semantic") for i in range(3)], now=10)
    before = result.to_json()
    data = result.to_dict()
    data["trace"][0]["rules"][1]["evidence"]["allow"].append("edited")
    assert result.to_json() == before  # the edit reaches neither the other rows nor the result
    assert [t.rules[1].evidence["allow"] for t in result.trace] == [["semantic"]] * 3
    assert "&id" not in yaml.safe_dump(result.to_dict()["trace"])  # no YAML anchors for shared evidence


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0.0, -1.5, 2.0, 1e300]), st.integers(-1, 3), st.booleans()), max_size=30))
def test_same_gives_rows_one_code_exactly_when_every_column_is_equal(rows) -> None:
    columns = [np.array([row[i] for row in rows]) for i in range(3)] if rows else [np.zeros(0)] * 3
    codes = same(*columns).tolist()
    for a in range(len(rows)):
        for b in range(len(rows)):
            assert (codes[a] == codes[b]) == (rows[a] == rows[b])
    assert codes == [] or max(codes) < len(rows)


def test_absent_ttl_without_default_never_expires() -> None:
    result = solve(make_policy(BUDGET, rules="- freshness: {}\n"), [rec("old", timestamp=-1e9)], now=10)
    assert outcome(result) == {"old": "raw"}


# --- max age ----------------------------------------------------------------------------


def test_max_age_is_inclusive() -> None:
    policy = make_policy(BUDGET, rules="- max_age: 48\n")
    result = solve(policy, [rec("48h", timestamp=52), rec("48h+", timestamp=51.5)], now=100)
    assert outcome(result) == {"48h": "raw", "48h+": "max-age"}
    assert verdicts(result, "48h+")["max-age"].evidence == {"age": 48.5, "max_age": 48}


# --- tenant -----------------------------------------------------------------------------


def test_tenant_isolates_other_tenants_are_only_counted() -> None:
    policy = make_policy(BUDGET + "tenant: a\n")
    result = solve(policy, [rec("mine", tenant="a"), rec("theirs", tenant="b"), rec("nobody")], now=1)
    assert outcome(result) == {"mine": "raw"}
    assert result.other_tenants == 2 and result.records_count == 3
    assert "belongs to tenant `a`" in verdicts(result, "mine")["tenant"].reason
    text = result.to_json()
    assert "theirs" not in text and "nobody" not in text


def test_the_tenant_rule_fails_closed_when_called_directly() -> None:
    """The scope stage keeps other tenants' records out of a run; the rule itself still fails
    closed for a caller that hands it records of another tenant or of none."""
    from memsolve.context import resolve_context
    from memsolve.policies.rules import evaluate

    policy = make_policy(BUDGET + "tenant: a\n")
    records = memsolve.load_records([rec("theirs", tenant="b"), rec("nobody")])
    judged = evaluate(policy, records.columns, resolve_context(policy, records, memsolve.Context(now=1)))
    reasons = {judged.columns.records[row].id: judged.deciding_verdict(row).reason
               for row in range(len(records.columns)) if not judged.eligible[row]}
    assert reasons == {"theirs": "belongs to tenant `b`, not `a`", "nobody": "record has no tenant (fail closed)"}


def test_tenant_not_configured_passes_and_says_so() -> None:
    result = solve(make_policy(BUDGET), [rec("x", tenant="b")], now=1)
    assert outcome(result) == {"x": "raw"}
    assert "not enforced" in verdicts(result, "x")["tenant"].reason


def test_tenant_from_context_must_agree_with_policy() -> None:
    policy = make_policy(BUDGET + "tenant: a\n")
    with pytest.raises(memsolve.InputError, match="conflicting tenant"):
        solve(policy, [rec("x", tenant="a")], now=1, tenant="b")
    assert outcome(solve(policy, [rec("x", tenant="a")], now=1, tenant="a")) == {"x": "raw"}


# --- stores and sessions -----------------------------------------------------------------


def test_stores_allow_list_and_missing_store_fails_closed() -> None:
    policy = make_policy(BUDGET, rules="- stores: {allow: [semantic]}\n")
    result = solve(policy, [rec("s", store="semantic"), rec("e", store="episodic"), rec("none")], now=1)
    assert outcome(result) == {"s": "raw", "e": "stores", "none": "stores"}


def test_sessions_current_only() -> None:
    policy = make_policy(BUDGET, rules="- sessions: {include_previous: false}\n")
    records = [rec("now", session="s2"), rec("before", session="s1"), rec("none")]
    result = solve(policy, records, now=1, session="s2")
    assert outcome(result) == {"now": "raw", "before": "sessions", "none": "sessions"}


def test_sessions_include_previous() -> None:
    policy = make_policy(BUDGET, rules="- sessions: {include_previous: true}\n")
    result = solve(policy, [rec("before", session="s1"), rec("none")], now=1)
    assert outcome(result) == {"before": "raw", "none": "raw"}


def test_sessions_current_only_without_a_session_is_an_input_error() -> None:
    policy = make_policy(BUDGET, rules="- sessions: {include_previous: false}\n")
    with pytest.raises(memsolve.InputError, match="no session is given") as info:
        solve(policy, [rec("x", session="s1")], now=1)
    assert (info.value.line, info.value.column) == (6, 5)  # the rule item in the policy


# --- version authority -------------------------------------------------------------------


def test_version_authority_per_document_and_default() -> None:
    policy = make_policy(BUDGET, rules="- version_authority: {current_versions: {spec: v3}, current_version: v2}\n")
    records = [
        rec("spec-v3", authority=True, document="spec", version="v3"),
        rec("spec-v2", authority=True, document="spec", version="v2"),
        rec("plain-v2", authority=True, version="v2"),  # no document: the default version
        rec("plain-v1", authority=True, version="v1"),
        rec("other-doc", authority=True, document="unknown-doc", version="v2"),  # no known current
        rec("not-authority", authority=False, version="v0"),
    ]
    result = solve(policy, records, now=1)
    assert outcome(result) == {
        "spec-v3": "raw", "spec-v2": "version-authority", "plain-v2": "raw",
        "plain-v1": "version-authority", "other-doc": "raw", "not-authority": "raw",
    }


def test_version_authority_fails_closed_without_a_current_version() -> None:
    policy = make_policy(BUDGET, rules="- version_authority: {}\n")
    result = solve(policy, [rec("auth", authority=True, version="v1"), rec("plain")], now=1)
    assert outcome(result) == {"auth": "version-authority", "plain": "raw"}
    assert "fail closed" in verdicts(result, "auth")["version-authority"].reason


def test_version_from_flags_and_records_file() -> None:
    policy = make_policy(BUDGET, rules="- version_authority: {}\n")
    records = {"records": [rec("a", authority=True, document="d", version="v2")], "now": 1}
    assert outcome(solve(policy, records, current_versions={"d": "v2"})) == {"a": "raw"}
    records["current_versions"] = {"d": "v1"}
    with pytest.raises(memsolve.InputError, match="conflicting current version of `d`"):
        solve(policy, records, current_versions={"d": "v2"})


# --- latest key --------------------------------------------------------------------------


def test_latest_key_never_resurrects_a_superseded_record() -> None:
    policy = make_policy(BUDGET, rules="- freshness: {}\n- latest_key: {}\n")
    records = [rec("old", key="k", timestamp=1), rec("new-but-expired", key="k", timestamp=5, ttl=1)]
    result = solve(policy, records, now=10)
    assert outcome(result) == {"old": "latest-key", "new-but-expired": "freshness"}


def test_latest_key_tie_goes_to_the_later_input_position() -> None:
    policy = make_policy(BUDGET, rules="- latest_key: {}\n")
    result = solve(policy, [rec("first", key="k", timestamp=3), rec("second", key="k", timestamp=3)], now=10)
    assert outcome(result) == {"first": "latest-key", "second": "raw"}
    assert verdicts(result, "first")["latest-key"].evidence == {"key": "k", "latest": "second", "tie": True}
    assert "tie" in verdicts(result, "second")["latest-key"].reason


def test_latest_key_is_per_tenant_and_keyless_records_pass() -> None:
    policy = make_policy(BUDGET, rules="- latest_key: {}\n")
    records = [rec("a-old", key="k", tenant="a", timestamp=1), rec("b-new", key="k", tenant="b", timestamp=2),
               rec("a-new", key="k", tenant="a", timestamp=3), rec("nokey", timestamp=0)]
    result = solve(policy, records, now=10)
    assert outcome(result) == {"a-old": "latest-key", "b-new": "raw", "a-new": "raw", "nokey": "raw"}


def test_tie_flag_only_for_the_timestamp_that_tied() -> None:
    policy = make_policy(BUDGET, rules="- latest_key: {}\n")
    records = [rec("x", key="k", timestamp=1), rec("y", key="k", timestamp=1), rec("z", key="k", timestamp=2)]
    result = solve(policy, records, now=10)
    assert verdicts(result, "z")["latest-key"].evidence["tie"] is False


# --- evaluation order and traces -------------------------------------------------------


def test_every_rule_is_evaluated_and_the_first_failure_decides() -> None:
    policy = make_policy(
        BUDGET + "tenant: a\n",
        rules="- max_age: 5\n- freshness: {}\n- stores: {allow: [semantic]}\n",
    )
    result = solve(policy, [rec("bad", tenant="a", timestamp=0, ttl=1, store="working")], now=10)
    entry = result.entry("bad")
    assert [(r.rule, r.passed) for r in entry.rules] == [
        ("tenant", True), ("max-age", False), ("freshness", False), ("stores", False)]
    assert result.excluded[0].rule == "max-age"


def test_custom_rule_ids_name_the_rule_in_traces() -> None:
    policy = make_policy(BUDGET, rules="- id: short-ttl\n  freshness: {default_ttl: 1}\n")
    result = solve(policy, [rec("x", timestamp=0)], now=10)
    assert result.excluded[0].rule == "short-ttl"


# --- invalid records ---------------------------------------------------------------------


def test_invalid_record_fails_the_run_by_default() -> None:
    with pytest.raises(memsolve.InputError, match="timestamp is later than now"):
        solve(make_policy(BUDGET), [rec("future", timestamp=11)], now=10)


def test_invalid_records_can_be_excluded_with_a_trace() -> None:
    policy = make_policy(BUDGET + "on_invalid_record: exclude\n")
    records = [rec("ok"), rec("future", timestamp=11), rec("neg", tokens=-1), rec("ok")]
    result = solve(policy, records, now=10)
    assert outcome(result)["future"] == "invalid"
    assert outcome(result)["neg"] == "invalid"
    assert [e.rule for e in result.excluded] == ["invalid", "invalid", "invalid"]
    dup = result.trace[3]
    assert dup.outcome == "excluded" and "duplicate record id" in dup.rules[0].reason
    assert result.trace[0].outcome == "selected"
