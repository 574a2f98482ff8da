"""Seed 000's worked examples, exactly, and the result contract (DESIGN §7)."""

from __future__ import annotations

import json

import pytest

import memsolve
from memsolve.pipeline import frontier
from memsolve.schemas import validator

from .conftest import ROOT

CASES = {
    # case: (selected ids, value, tokens, excluded {id: rule}, original action, compressed action, preserved)
    "base": (["review-v2", "summary"], 11.0, 6, {"old-review": "version-authority"}, 1, 1, True),
    "changed": (["summary"], 3.0, 2, {"old-review": "version-authority"}, 1, 0, False),
    "transfer": (["current"], 4.0, 3, {"expired": "freshness"}, 0, 0, True),
}


def _solve(case: str, **kw) -> memsolve.Result:
    policy = memsolve.load_policy(ROOT / "policies/ch15.yaml")
    return memsolve.solve(policy, memsolve.load_records(ROOT / f"examples/ch15/{case}.json"), **kw)


@pytest.mark.parametrize("case", sorted(CASES))
def test_seed_000_worked_examples(case: str) -> None:
    ids, value, tokens, excluded, original, compressed, preserved = CASES[case]
    result = _solve(case)
    assert [s.id for s in result.selected] == ids
    assert result.objective == value
    assert result.utility == value
    assert result.tokens_used == tokens
    assert {e.id: e.rule for e in result.excluded} == excluded
    assert result.compression is not None
    assert result.compression.original_action == original
    assert result.compression.compressed_action == compressed
    assert result.compression.preserved is preserved
    assert result.solver.status == "optimal"
    assert result.solver.cross_check == {"engine": "dp", "objective": value, "agrees": True}


def test_seed_000_old_review_is_fresh_but_stale_in_authority() -> None:
    entry = _solve("base").entry("old-review")
    verdicts = {r.rule: r for r in entry.rules}
    assert verdicts["freshness"].passed  # freshness alone is not enough
    assert not verdicts["version-authority"].passed
    assert verdicts["version-authority"].reason == "authority bound to v1, current is v2"
    assert verdicts["version-authority"].evidence["current_version"] == "v2"


def test_seed_000_compression_gaps() -> None:
    c = _solve("base").to_dict()["compression"]
    assert c == {"original_action": 1, "compressed_action": 1, "preserved": True,
                 "original_gap": 2.0, "compressed_gap": 2.0, "zero_gap": False}


def test_compression_zero_gap_is_flagged_and_ties_go_to_first_index() -> None:
    from memsolve.result import compression_check

    c = compression_check((5.0, 5.0), (1.0, 2.0))
    assert c.original_action == 0 and c.original_gap == 0.0 and c.zero_gap
    assert not c.preserved


def test_seed_000_frontier_breakpoints() -> None:
    policy = memsolve.load_policy(ROOT / "policies/ch15.yaml")
    points = frontier(policy, memsolve.load_records(ROOT / "examples/ch15/base.json"))
    assert points == [(0, 0.0), (2, 3.0), (4, 8.0), (6, 11.0)]


@pytest.mark.parametrize(
    "policy, records",
    [("ch15", "examples/ch15/base.json"), ("ch15", "examples/ch15/changed.json"),
     ("ch15", "examples/ch15/transfer.json"), ("team-a", None), ("team-b", None)],
)
def test_results_match_schema_and_cover_every_record_once(policy: str, records: str | None) -> None:
    p = memsolve.load_policy(ROOT / f"policies/{policy}.yaml")
    rs = memsolve.load_records(ROOT / (records or p.records))
    # production-shaped policies name no session; team-b keeps only the current one
    result = memsolve.solve(p, rs, memsolve.Context(session="s-17" if policy == "team-b" else None))
    data = json.loads(result.to_json())
    errors = list(validator("result").iter_errors(data))
    assert errors == []
    listed = [x["id"] for x in data["selected"] + data["dropped"] + data["excluded"]]
    view = [r for r in rs.records if p.tenant is None or r.tenant == p.tenant]
    assert sorted(listed) == sorted(r.id for r in view)
    # the partition: every record read is listed once, or counted as another tenant's
    assert len(listed) == len(set(listed)) == data["records"]["count"] - data["other_tenants"]
    assert data["other_tenants"] == len(rs.records) - len(view)
    for section in ("selected", "dropped", "excluded"):
        positions = [next(t["position"] for t in data["trace"] if t["id"] == x["id"]) for x in data[section]]
        assert positions == sorted(positions)  # input order
    assert [t["position"] for t in data["trace"]] == list(range(len(view)))  # among the tenant's records
    assert data["tokens_used"] <= data["budget"]["tokens"]


def test_same_inputs_give_byte_identical_json() -> None:
    p = memsolve.load_policy(ROOT / "policies/team-a.yaml")
    first = memsolve.solve(p, memsolve.load_records(ROOT / p.records)).to_json()
    second = memsolve.solve(memsolve.load_policy(ROOT / "policies/team-a.yaml"),
                            memsolve.load_records(ROOT / p.records)).to_json()
    assert first == second


@pytest.mark.parametrize("engine", ["dp", "cp-sat"])
def test_exact_engines_report_the_same_allocation(engine: str) -> None:
    p = memsolve.load_policy(ROOT / "policies/team-a.yaml")
    rs = memsolve.load_records(ROOT / p.records)
    reference = memsolve.solve(p, rs, engine="cp-sat")
    result = memsolve.solve(p, rs, engine=engine)
    assert result.selected == reference.selected
    assert result.objective == reference.objective


def test_team_a_trades_fidelity_for_budget_and_every_rule_excludes_something() -> None:
    p = memsolve.load_policy(ROOT / "policies/team-a.yaml")
    result = memsolve.solve(p, memsolve.load_records(ROOT / p.records))
    levels = {s.level for s in result.selected}
    assert {"raw", "summary"} <= levels  # some records are compressed to fit
    rules = {e.rule for e in result.excluded}
    assert {"stores", "max-age", "freshness", "version-authority", "latest-key"} <= rules
    assert all(s.id.startswith("a-") for s in result.selected)
    assert result.other_tenants == 11  # team-b's records and the untenanted one: counted, not listed
    assert result.tokens_used <= 700 and len(result.selected) <= 12


def test_team_b_scopes_to_the_current_session() -> None:
    p = memsolve.load_policy(ROOT / "policies/team-b.yaml")
    result = memsolve.solve(p, memsolve.load_records(ROOT / p.records), memsolve.Context(session="s-17"))
    assert "sessions" in {e.rule for e in result.excluded}
    assert all(s.id.startswith("b-") for s in result.selected)


def test_greedy_engine_reports_the_exact_optimum_for_comparison() -> None:
    p = memsolve.load_policy(ROOT / "policies/team-a.yaml")
    result = memsolve.solve(p, memsolve.load_records(ROOT / p.records), engine="greedy")
    exact = memsolve.solve(p, memsolve.load_records(ROOT / p.records))
    assert result.solver.engine == "greedy" and result.solver.status == "feasible"
    assert result.solver.cross_check["objective"] == exact.objective
    assert result.objective <= exact.objective
    assert exact.solver.greedy["loss"] == pytest.approx(exact.objective - result.objective)


def test_public_api_exports() -> None:
    assert sorted(memsolve.__all__) == sorted([
        "ArraySolution", "Context", "InputError", "MemsolveError", "Policy", "Record", "RecordSet",
        "Result", "Selector", "SolverError", "StateError", "StateStore", "load_policy", "load_records",
        "policy_from_text", "solve", "solve_arrays",
    ])
    for name in memsolve.__all__:
        assert getattr(memsolve, name).__doc__


def test_a_duplicate_never_hides_the_outcome_of_the_record_that_holds_the_id() -> None:
    policy = memsolve.policy_from_text("apiVersion: memsolve/v1\nkind: MemoryPolicy\nmetadata: {name: p}\n"
                                       "budget: {tokens: 5}\non_invalid_record: exclude\n")
    records = [{"id": "x", "timestamp": 1, "tokens": 1, "utility": 1.0},
               {"id": "x", "timestamp": 1, "tokens": 1, "utility": 2.0},
               {"timestamp": 1, "tokens": 1}]
    outcomes = memsolve.solve(policy, memsolve.load_records(records), memsolve.Context(now=5)).outcomes()
    assert outcomes["x"] == {"outcome": "selected", "level": "raw"}
    assert outcomes["x#1"]["rule"] == "invalid" and outcomes["#2"]["rule"] == "invalid"


def test_a_run_leaves_the_garbage_collector_as_it_found_it() -> None:
    import gc

    policy = memsolve.load_policy(ROOT / "policies/team-a.yaml")
    records = memsolve.load_records(ROOT / "examples/shared.json")
    for enabled in (True, False):
        (gc.enable if enabled else gc.disable)()
        try:
            memsolve.solve(policy, records)
            with pytest.raises(memsolve.InputError):
                memsolve.solve(policy, records, memsolve.Context(now=1))  # fails inside the run
            assert gc.isenabled() is enabled
        finally:
            gc.enable()


def test_the_greedy_baseline_runs_only_when_the_report_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    from memsolve.solver import engines

    runs = []
    real = engines.solve_greedy
    monkeypatch.setattr(engines, "solve_greedy", lambda *a, **k: runs.append(1) or real(*a, **k))
    policy = memsolve.policy_from_text("apiVersion: memsolve/v1\nkind: MemoryPolicy\nmetadata: {name: g}\n"
                                       "budget: {tokens: 5}\nsolver: {engine: dp, cross_check: none}\n")
    items = [{"id": f"r{i}", "timestamp": 0, "tokens": 2 + i % 3, "utility": 1.0 + i} for i in range(6)]
    result = memsolve.Selector(policy, items).select(now=1, trace="none")
    assert [c.id for c in result.selected] and runs == []  # the prompt alone: no baseline run
    report = json.loads(result.to_json())["solver"]["greedy"]
    assert runs == [1]
    assert report["loss"] == pytest.approx(result.objective - report["objective"]) and report["loss"] >= 0
    assert dict(result.solver.greedy) == report and runs == [1]  # run once, then kept
