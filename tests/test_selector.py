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
        turn = selector.select(query=query, now=now, trace="full")
        once = memsolve.solve(POLICY, memsolve.load_records(_records()), memsolve.Context(now=now, query=query))
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
