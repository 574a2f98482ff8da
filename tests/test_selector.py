"""The Selector: one select per turn over records held between turns, the same answers as the
one-shot path, incremental add/remove, and state rounds exactly as the CLI's --state."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import memsolve
from memsolve.selector import Selector

from .conftest import ROOT, make_policy, rec

POLICY = make_policy("budget: {tokens: 10}\ntenant: t\nutility: {from: relevance}\n",
                     rules="- relevance: {recency_weight: 0.2, half_life: 10}\n- latest_key: {}\n")


def _records() -> list[dict]:
    return [
        {"id": "deploy", "tenant": "t", "timestamp": 5, "text": "deploy failed on the database migration"},
        {"id": "lunch", "tenant": "t", "timestamp": 9, "text": "team lunch on friday"},
        {"id": "db", "tenant": "t", "timestamp": 7, "key": "db", "text": "database runs postgres 16",
         "representations": {"raw": {"text": "database runs postgres 16 with logical replication"},
                             "summary": {"text": "postgres 16"}}},
        {"id": "theirs", "tenant": "u", "timestamp": 8, "text": "database secrets of another tenant"},
    ]


def test_select_matches_the_one_shot_solve_and_carries_the_text() -> None:
    selector = Selector(POLICY, _records())
    for query, now in (("database migration", 10), ("lunch", 12)):
        previous = selector.prompt_orders.get("t")  # the turn before's prompt order (DESIGN §15)
        turn = selector.select(query=query, now=now, trace="full")
        once = memsolve.solve(POLICY, memsolve.load_records(_records()), memsolve.Context(now=now, query=query),
                              previous=previous)
        assert turn.to_json() == once.to_json()
    turn = selector.select(query="database migration", now=10)
    texts = {c.id: c.text for c in turn.selected}
    assert texts["deploy"] == "deploy failed on the database migration"
    assert texts.get("db") in (None, "database runs postgres 16 with logical replication", "postgres 16")
    assert "theirs" not in turn.to_json() and turn.other_tenants == 1


def test_trace_modes_choose_how_much_json_is_written() -> None:
    selector = Selector(POLICY, _records())
    full = json.loads(selector.select(query="database", now=10, trace="full").to_json())
    excluded = json.loads(selector.select(query="database", now=10, trace="excluded").to_json())
    none = json.loads(selector.select(query="database", now=10, trace="none").to_json())
    assert len(full["trace"]) == 3 and none["trace"] == []
    assert [t["id"] for t in excluded["trace"]] == [e["id"] for e in full["excluded"]]
    for other in (excluded, none):  # only the trace differs
        assert {k: v for k, v in other.items() if k != "trace"} == {k: v for k, v in full.items() if k != "trace"}
    with pytest.raises(memsolve.InputError, match="unknown trace mode `some`"):
        selector.select(query="database", now=10, trace="some")


def test_add_validates_only_the_new_records_and_remove_drops_by_id() -> None:
    selector = Selector(POLICY, _records())
    selector.add([rec("extra", tokens=2, utility=3.0, tenant="t", timestamp=9, text="database extra note"),
                  {"id": "deploy", "tenant": "t", "timestamp": 9, "text": "a second deploy"},  # same (tenant, id)
                  {"id": "deploy", "tenant": "u", "timestamp": 9, "text": "another tenant's deploy"},  # fine
                  {"id": "broken", "tenant": "t", "timestamp": 9, "tokens": -1}])
    held = selector.records
    assert [r.position for r in held.records] == list(range(8))
    invalid = {r.id: r.error.message for r in held.invalid}
    assert "duplicate record id `deploy`" in invalid["deploy"] and "broken" in invalid
    assert invalid["broken"].startswith("expected")  # located in the list it came in
    on_exclude = make_policy("budget: {tokens: 10}\ntenant: t\nutility: {from: relevance}\n"
                             "on_invalid_record: exclude\n", rules="- relevance: {}\n")
    turn = Selector(on_exclude, _records())
    turn.add([rec("extra", tokens=2, utility=3.0, tenant="t", timestamp=9, text="database extra note")])
    assert "extra" in {c.id for c in turn.select(query="database", now=10).selected}
    assert turn.remove(["extra"]) == 1 and turn.remove(["extra"]) == 0
    assert "extra" not in turn.select(query="database", now=10, trace="full").to_json()
    turn.add([rec("later", tokens=1, utility=1.0, tenant="t", timestamp=9, text="database later")])
    assert len({r.position for r in turn.records.records}) == len(turn.records.records)  # no position reused


def test_an_admission_problem_of_an_added_record_is_located_where_it_came_from(tmp_path: Path) -> None:
    selector = Selector(POLICY, ROOT / "examples/incidents/records.json")
    selector.add([{"id": "future", "tenant": "t", "timestamp": 5000, "text": "from the future"}])
    with pytest.raises(memsolve.InputError, match="timestamp is later than now") as err:
        selector.select(query="database")  # now: the incidents file's own (1000)
    assert err.value.path == "[0].timestamp"  # its own list, not a line of the incidents file


def test_with_state_every_select_is_one_round_like_the_cli(tmp_path: Path, cli) -> None:
    db_api, db_cli = tmp_path / "api.db", tmp_path / "cli.db"
    policy = memsolve.load_policy(ROOT / "policies/team-a.yaml")
    selector = Selector(policy, ROOT / "examples/shared.json", state=db_api, agent="planner")
    for turn in range(1, 4):
        mine = selector.select(trace="full")
        theirs = cli("--policy", "policies/team-a.yaml", "--state", db_cli, "--agent", "planner", "--format", "json")
        assert mine.round == turn and mine.to_json() == theirs.stdout
    assert selector.select(refresh=True).extra["state"]["refresh"] is True
    with pytest.raises(memsolve.InputError, match="needs an agent"):
        Selector(policy, [], state=db_api)
    with pytest.raises(memsolve.InputError, match="no state"):
        Selector(policy, []).select(refresh=True)


def test_remove_touches_only_the_policys_tenant_and_a_case_object_is_accepted() -> None:
    policy = memsolve.load_policy(ROOT / "policies/team-a.yaml")
    selector = Selector(policy, json.loads((ROOT / "examples/shared.json").read_text()))  # a case object
    assert selector.remove(["b-ticket"]) == 0  # team-b's record: not team-a's to remove, and no oracle
    assert selector.remove(["a-db-arch"]) == 1
    assert len(selector.records.records) == 32


def _outcomes(result: memsolve.Result) -> str:
    """The full result, less the record set's digest (which names the edit history)."""
    data = json.loads(result.to_json())
    data["records"].pop("sha256")
    return json.dumps(data, sort_keys=True)


@pytest.mark.parametrize("tenant_rule", ["", "tenant: t\n"])
def test_add_and_remove_carry_the_columns_and_answer_as_a_fresh_selector(tenant_rule: str) -> None:
    """After turns have built the columns, level table, views and masks, add and remove extend or
    cut them rather than build anew; every later turn answers exactly as a Selector built from the
    final records (rules over all records — the latest per key, relevance — included)."""
    policy = make_policy(f"budget: {{tokens: 12}}\n{tenant_rule}utility: {{from: relevance}}\n"
                         "stores: [semantic, working]\non_invalid_record: exclude\n",
                         rules="- relevance: {half_life: 10}\n- latest_key: {}\n"
                               "- freshness: {default_ttl: 6, ttl_by_store: {working: 2}}\n")
    base = [{"id": f"m{i}", "tenant": "t" if i % 4 else "u", "timestamp": i, "key": f"k{i % 3}",
             "store": "working" if i % 2 else "semantic", "text": f"database note {i} " + "x " * (i % 5)}
            for i in range(12)]
    more = [{"id": "late", "tenant": "t", "timestamp": 11, "key": "k0", "store": "semantic", "text": "database late"},
            {"id": "m3", "tenant": "t", "timestamp": 1, "text": "a duplicate of m3"},  # refused as a duplicate
            {"id": "new", "tenant": "t", "timestamp": 10, "tokens": 2, "utility": 0.5, "store": "working"}]
    selector = Selector(policy, base)
    selector.select(query="database note", now=11)  # builds what is kept between turns
    selector.add(more)
    held = selector.records.view("t") if tenant_rule else selector.records
    assert "columns" in held.__dict__  # carried, not left to be built again
    selector.select(query="database", now=12)
    assert selector.remove(["m5", "m6", "late"], tenant="t") == 3
    final = [r for r in base + more if r["id"] not in ("m5", "m6", "late") or r.get("tenant") != "t"]
    fresh = Selector(policy, base)  # the same edits, but no turn before them: nothing built to carry
    fresh.add(more)
    fresh.remove(["m5", "m6", "late"], tenant="t")
    assert "columns" not in fresh.records.__dict__ and not fresh.records._views
    for query, now in (("database note", 12), ("late", 13), (None, 12)):
        got = selector.select(query=query, now=now, trace="full", tenant=None if tenant_rule else "t")
        want = fresh.select(query=query, now=now, trace="full", tenant=None if tenant_rule else "t")
        assert _outcomes(got) == _outcomes(want)
    assert len(final) == len(selector.records.records)


def test_add_and_remove_refuse_one_record_or_one_id_given_bare() -> None:
    # a mapping's keys or a string's characters would be taken for records or ids
    policy = memsolve.policy_from_text(
        "apiVersion: memsolve/v1\nkind: MemoryPolicy\nmetadata: {name: p}\nbudget: {tokens: 10}\nrules: []\n", "p.yaml")
    selector = memsolve.Selector(policy, [{"id": i, "timestamp": 0, "tokens": 1, "utility": 1.0} for i in ("ab", "a")])
    with pytest.raises(memsolve.InputError, match=r"remove takes a list of ids, got one string \(`ab`\)"):
        selector.remove("ab")
    with pytest.raises(memsolve.InputError, match="add takes a list of records, got dict"):
        selector.add({"id": "x", "timestamp": 0, "tokens": 1, "utility": 1.0})
    assert [r.id for r in selector.records.records] == ["ab", "a"]  # nothing changed
    assert selector.remove(["ab"]) == 1 and [r.id for r in selector.records.records] == ["a"]
