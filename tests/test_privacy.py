"""Tenant privacy (DESIGN §9): a tenant's output is the same whatever other tenants' records the
input holds. Property: for random multi-tenant record sets, team A's result JSON, table and
explanations are byte-identical to those of A's records alone, except ``other_tenants`` and the
``records`` block (hash and count of the whole input)."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import memsolve
from memsolve.ci.explain import explain, render_text
from memsolve.render import capture, result_table

from .conftest import make_policy

POLICY = make_policy(
    """tenant: A
budget: {tokens: 30, max_records: 4}
context: {now: 100, query: "database timeout deploy"}
on_invalid_record: exclude
""",
    name="privacy",
    rules="""- stores: {allow: [semantic, episodic]}
- max_age: 80
- freshness: {default_ttl: 50}
- latest_key: {}
- version_authority: {current_version: v2}
- relevance: {recency_weight: 0.3, half_life: 20}
""",
)
WORDS = ["database", "timeout", "deploy", "cache", "rollback", "latency", "owner", "pager", "ticket", "plan"]


def _text(draw: st.DrawFn) -> str:
    return " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6)))


@st.composite
def own_record(draw: st.DrawFn, index: int) -> dict:
    record = {"id": f"a{index}", "tenant": "A", "timestamp": draw(st.integers(0, 100)),
              "store": draw(st.sampled_from(["semantic", "episodic", "working"])), "text": _text(draw),
              "tokens": draw(st.integers(1, 15)), "utility": draw(st.sampled_from([0.5, 1.0, 2.0, 3.5, 7.0]))}
    if draw(st.booleans()):
        record["key"] = draw(st.sampled_from(["k1", "k2"]))
    if draw(st.booleans()):
        record["authority"], record["version"] = True, draw(st.sampled_from(["v1", "v2"]))
    return record


@st.composite
def foreign_record(draw: st.DrawFn) -> dict:
    """Another tenant's record, an untenanted or unreadable one, well-formed or hostile: same ids
    as A's, A's words, other kinds of time, future times, bad values, unknown stores."""
    record: dict = {"id": draw(st.sampled_from(["a0", "a1", "b0", "b1", "x"])), "timestamp": draw(st.integers(0, 100)),
                    "text": _text(draw), "tokens": draw(st.integers(1, 15)), "utility": 5.0,
                    "store": draw(st.sampled_from(["semantic", "episodic", "nowhere"]))}
    tenant = draw(st.sampled_from(["B", "C", None, 7, "a"]))
    if tenant is not None:
        record["tenant"] = tenant
    hostility = draw(st.sampled_from(["none", "negative", "rfc3339", "future", "bad-time", "key", "nan-ish"]))
    if hostility == "negative":
        record["tokens"] = -1
    elif hostility == "rfc3339":
        record["timestamp"] = "2026-11-30T09:00:00Z"
    elif hostility == "future":
        record["timestamp"] = 10_000
    elif hostility == "bad-time":
        record["timestamp"] = "yesterday"
    elif hostility == "key":
        record["key"] = "k1"  # A's key: must not supersede A's records
    elif hostility == "nan-ish":
        record["utility"] = -3
    return record


@st.composite
def mixed(draw: st.DrawFn) -> tuple[list[dict], list[dict]]:
    count = draw(st.integers(1, 6))
    own = [draw(own_record(i)) for i in range(count)]
    foreign = draw(st.lists(foreign_record(), max_size=8))
    merged = list(own)
    for record in foreign:  # anywhere: before, between and after A's records
        merged.insert(draw(st.integers(0, len(merged))), record)
    return own, merged


def _normal(text: str) -> str:
    text = re.sub(r'"records": \{[^}]*\}', '"records": {}', text)
    text = re.sub(r'"other_tenants": \d+', '"other_tenants": 0', text)
    return re.sub(r"other tenants \d+ records \(counted, not shown\)\n", "", text)


def _outputs(records: list[dict]) -> dict[str, str]:
    loaded = memsolve.load_records(records)
    result = memsolve.solve(POLICY, loaded)
    out = {"json": result.to_json(), "table": capture(result_table, result)}
    for rid in ("a0", "a1"):
        try:
            out[f"explain {rid}"] = json.dumps(explain(POLICY, loaded, rid).to_dict()) + render_text(
                explain(POLICY, loaded, rid))
        except memsolve.InputError as error:
            out[f"explain {rid}"] = error.render()
    return {name: _normal(text) for name, text in out.items()}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mixed())
def test_a_tenants_output_ignores_every_other_tenants_records(case: tuple[list[dict], list[dict]]) -> None:
    own, merged = case
    alone, together = _outputs(own), _outputs(merged)
    assert together == alone
    # ids only other tenants use (a0 and a1 are asked for by explain, so they may be echoed)
    foreign_ids = {r["id"] for r in merged if r.get("tenant") != "A"} - {r["id"] for r in own} - {"a0", "a1"}
    for text in together.values():
        for rid in foreign_ids:
            assert f'"{rid}"' not in text and f"`{rid}`" not in text


def test_the_partition_counts_every_record_read() -> None:
    records = [{"id": "a0", "tenant": "A", "timestamp": 1, "tokens": 2, "utility": 1.0},
               {"id": "a0", "tenant": "B", "timestamp": 1, "tokens": 2, "utility": 1.0},
               {"id": "z", "timestamp": 1, "tokens": -1}]
    result = memsolve.solve(POLICY, memsolve.load_records(records))
    listed = len(result.selected) + len(result.dropped) + len(result.excluded)
    assert (listed, result.other_tenants, result.records_count) == (1, 2, 3)


def test_explaining_another_tenants_id_answers_as_for_no_such_id() -> None:
    records = memsolve.load_records([{"id": "a0", "tenant": "A", "timestamp": 1, "tokens": 2, "utility": 1.0},
                                     {"id": "theirs", "tenant": "B", "timestamp": 1, "tokens": 2, "utility": 1.0}])
    messages = []
    for rid in ("theirs", "nothing"):
        with pytest.raises(memsolve.InputError) as err:
            explain(POLICY, records, rid)
        messages.append(err.value.render().replace(rid, "ID"))
    assert messages[0] == messages[1] and "a0" not in messages[0]


def test_another_tenants_duplicate_or_malformed_record_never_fails_this_run() -> None:
    strict = make_policy("tenant: A\nbudget: {tokens: 10}\ncontext: {now: 5}\n", name="strict")  # errors fail runs
    records = [{"id": "x", "tenant": "B", "timestamp": 1, "tokens": 1, "utility": 1.0},
               {"id": "x", "tenant": "A", "timestamp": 1, "tokens": 1, "utility": 1.0},
               {"id": "x", "tenant": "B", "timestamp": 1, "tokens": 1, "utility": 1.0},  # B's duplicate
               {"id": "y", "tenant": "B", "timestamp": 99, "tokens": -4}]  # B's bad values and future time
    result = memsolve.solve(strict, memsolve.load_records(records))
    assert [s.id for s in result.selected] == ["x"] and result.other_tenants == 3
    own_duplicate = records + [{"id": "x", "tenant": "A", "timestamp": 1, "tokens": 1, "utility": 1.0}]
    with pytest.raises(memsolve.InputError, match="duplicate record id `x`"):
        memsolve.solve(strict, memsolve.load_records(own_duplicate))


NO_TENANT = memsolve.policy_from_text(
    "apiVersion: memsolve/v1\nkind: MemoryPolicy\nmetadata: {name: nt}\nbudget: {tokens: 10}\nfidelity: [raw]\n"
    "on_invalid_record: exclude\nrules: []\n", "nt.yaml")
SHARED_ID = [{"id": "x", "tenant": "A", "timestamp": 0, "tokens": 10, "utility": 5.0, "text": "a's x"},
             {"id": "x", "tenant": "B", "timestamp": 0, "tokens": 10, "utility": 1.0, "text": "b's x"},
             {"id": "y", "tenant": "B", "timestamp": 0, "tokens": 0, "utility": 1.0, "text": "b's y"}]


def test_with_no_tenant_in_force_an_id_of_two_tenants_is_the_later_records_input_error(tmp_path) -> None:
    # the run's output, its state (ceilings, prompt order) and its prompt know records by id: with
    # every tenant's records in one run, the second `x` would share the first's ceiling and text
    selector = memsolve.Selector(NO_TENANT, SHARED_ID, state=tmp_path / "s.db", agent="ag")
    for _ in range(2):  # a second round reads the first's ceilings: A's `x` keeps its level
        result = selector.select(now=1)
        assert [(c.id, c.text) for c in result.selected] == [("x", "a's x"), ("y", "b's y")]
        assert [c.text for c in result.in_prompt_order()] == ["a's x", "b's y"]
        assert [(e.id, e.rule) for e in result.excluded] == [("x", "invalid")]
        assert result.excluded[0].reason.startswith("record id `x` is also an earlier record's: with no tenant")
    # each tenant's own run still has its `x`
    for tenant, text in (("A", "a's x"), ("B", "b's x")):
        assert [c.text for c in memsolve.solve(NO_TENANT, memsolve.load_records(SHARED_ID),
                                               memsolve.Context(now=1, tenant=tenant)).selected][0] == text


def test_an_empty_tenant_is_refused_it_would_share_the_state_of_runs_with_no_tenant(tmp_path) -> None:
    records = memsolve.load_records([{"id": "e", "tenant": "", "timestamp": 0, "tokens": 1, "utility": 1.0}])
    with pytest.raises(memsolve.InputError, match="the tenant must not be empty"):
        memsolve.solve(NO_TENANT, records, memsolve.Context(now=1, tenant=""))
    case = memsolve.load_records({"tenant": "", "now": 1, "records": [{"id": "e", "timestamp": 0, "tokens": 1}]})
    with pytest.raises(memsolve.InputError, match=r"^<records>: tenant: the tenant must not be empty"):
        memsolve.solve(NO_TENANT, case)


def test_admission_errors_cut_the_value_they_name() -> None:
    store, level = "s" * 120, "l" * 120
    result = memsolve.solve(NO_TENANT, memsolve.load_records([
        {"id": "a", "timestamp": 0, "store": store, "tokens": 1, "utility": 1.0},
        {"id": "b", "timestamp": 0, "representations": {level: {"tokens": 1, "utility": 1.0}}}]),
        memsolve.Context(now=1))
    assert [e.rule for e in result.excluded] == ["invalid", "invalid"]
    assert all(store not in e.reason and level not in e.reason and "..." in e.reason for e in result.excluded)


@pytest.mark.parametrize("first", [
    {"id": "x", "tenant": "A", "timestamp": 0, "store": "nowhere", "tokens": 1, "utility": 1.0},  # refused at admission
    {"id": "x", "tenant": "A", "timestamp": "bad", "tokens": 1, "utility": 1.0},  # refused on load
])
def test_a_repeated_id_is_refused_however_the_earlier_record_failed(first) -> None:
    later = {"id": "x", "tenant": "B", "timestamp": 0, "tokens": 1, "utility": 1.0}
    result = memsolve.solve(NO_TENANT, memsolve.load_records([first, later]), memsolve.Context(now=1))
    assert result.selected == () and [e.id for e in result.excluded] == ["x", "x"]
    assert result.excluded[1].reason.startswith("record id `x` is also an earlier record's")


def test_state_commands_refuse_an_empty_tenant(tmp_path, cli) -> None:
    # the runs with no tenant in force are kept under tenant "": asking for tenant "" would hand
    # out every tenant's state
    state = tmp_path / "s.db"
    memsolve.Selector(NO_TENANT, [{"id": "a-secret", "tenant": "A", "timestamp": 0, "tokens": 1, "utility": 1.0}],
                      state=state, agent="ag").select(now=1)
    for command in (("state", "export"), ("state", "show"), ("state", "reset", "--yes")):
        result = cli(*command, "--state", state, "--agent", "ag", "--tenant", "")
        assert result.exit_code == 2 and "the tenant must not be empty" in result.stderr
        assert "a-secret" not in result.stdout + result.stderr
    assert cli("state", "export", "--state", state, "--agent", "ag").stdout.count("a-secret") == 1  # kept


def test_an_unknown_field_name_is_cut_in_its_error() -> None:
    [bad] = memsolve.load_records([{"id": "a", "timestamp": 0, "tokens": 1, "Z" * 100_000: 1}]).invalid
    assert len(str(bad.error)) < 400 and "Z" * 41 not in str(bad.error)
