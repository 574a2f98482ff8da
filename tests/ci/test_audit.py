"""audit, explain, test, diff, check: the CI half, on the bundled examples."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest

import memsolve
from memsolve import pipeline
from memsolve.ci.explain import explain
from memsolve.solver import engines

from ..conftest import ROOT, make_policy, write


def _policy_copy(tmp_path: Path, edit=lambda s: s) -> Path:
    text = (ROOT / "policies/team-a.yaml").read_text()
    text = text.replace("records: ../examples/shared.jsonl", f"records: {ROOT / 'examples/shared.jsonl'}")
    return write(tmp_path, "team-a.yaml", edit(text))


# --- audit -------------------------------------------------------------------------------


def test_bundled_baseline_passes(cli) -> None:
    result = cli("audit", "--policy", "policies/team-a.yaml", "--baseline", "audits/team-a.json")
    assert result.exit_code == 0, result.stdout
    assert "0 changed outcome(s), 0 invariant violation(s)" in result.stdout


def test_audit_fails_when_one_rule_changes(cli, tmp_path: Path) -> None:
    changed = _policy_copy(tmp_path, lambda s: s.replace("ttl_by_store: {working: 48}", "ttl_by_store: {working: 96}"))
    result = cli("audit", "--policy", changed, "--baseline", "audits/team-a.json", "--format", "json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    bad = [f for f in data["findings"] if not f["passed"]]
    assert [(f["name"], f["message"].split(" (")[0]) for f in bad] == [
        ("a-working-stale", "excluded by freshness -> dropped")]
    assert bad[0]["location"]["line"] == 23  # the freshness rule in the policy
    assert bad[0]["data"]["before"] == {"outcome": "excluded", "rule": "freshness",
                                        "reason": "expired: age 70 exceeds ttl 48 (store `working`)"}


def test_write_baseline_never_overwrites_silently(cli, tmp_path: Path) -> None:
    target = tmp_path / "b.json"
    assert cli("audit", "--policy", "policies/team-a.yaml", "--write-baseline", target).exit_code == 0
    first = target.read_text()
    again = cli("audit", "--policy", "policies/team-a.yaml", "--write-baseline", target)
    assert again.exit_code == 2 and "--force" in again.stderr
    assert target.read_text() == first
    assert json.loads(first)["outcomes"]["a-approval-v2"] == {
        "outcome": "excluded", "rule": "version-authority",
        "reason": "authority bound to v2, current of `design-doc` is v3"}


def test_invariants_catch_a_broken_rule(cli, monkeypatch: pytest.MonkeyPatch) -> None:
    from memsolve.policies import rules
    from memsolve.policies.verdicts import Verdict

    def no_isolation(ev):
        return lambda record: Verdict("tenant", True, "broken", {})

    monkeypatch.setattr(rules, "_tenant", no_isolation)
    result = cli("audit", "--policy", "policies/team-a.yaml", "--baseline", "audits/team-a.json", "--format", "json")
    assert result.exit_code == 1
    codes = {f["code"] for f in json.loads(result.stdout)["findings"] if not f["passed"]}
    assert "invariant-tenant" in codes


def test_audit_needs_a_baseline_option(cli) -> None:
    assert cli("audit", "--policy", "policies/team-a.yaml").exit_code == 2


def test_bad_baseline_file(cli, tmp_path: Path) -> None:
    bad = write(tmp_path, "b.json", {"outcomes": []})
    result = cli("audit", "--policy", "policies/team-a.yaml", "--baseline", bad)
    assert result.exit_code == 2 and "not a memsolve baseline" in result.stderr


# --- report formats ----------------------------------------------------------------------


def test_junit_is_well_formed(cli, tmp_path: Path) -> None:
    changed = _policy_copy(tmp_path, lambda s: s.replace("max_age: 720", "max_age: 1000"))
    xml = cli("audit", "--policy", changed, "--baseline", "audits/team-a.json", "--format", "junit").stdout
    root = ET.fromstring(xml)
    assert root.tag == "testsuites" and int(root.get("failures")) >= 1
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert set(suites) == {"audit", "invariants"}
    cases = suites["audit"].findall("testcase")
    assert int(suites["audit"].get("tests")) == len(cases) == 33
    failures = [c for c in cases if c.find("failure") is not None]
    assert int(suites["audit"].get("failures")) == len(failures)
    assert "a-incident-2025" in {c.get("name") for c in failures}


def test_sarif_has_the_required_structure(cli) -> None:
    log = json.loads(cli("check", "policies/team-a.yaml", "--format", "sarif").stdout)
    assert log["version"] == "2.1.0" and len(log["runs"]) == 1
    run = log["runs"][0]
    assert run["tool"]["driver"]["name"] == "memsolve"
    rule_ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
    for result in run["results"]:
        assert result["ruleId"] in rule_ids and rule_ids[result["ruleIndex"]] == result["ruleId"]
        assert result["level"] in ("error", "warning", "note", "none") and result["message"]["text"]
        region = result["locations"][0]["physicalLocation"]["region"]
        assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "policies/team-a.yaml"
        assert region["startLine"] >= 1


@pytest.mark.parametrize("args", [
    ("check", "policies/team-a.yaml", "policies/team-a-next.yaml"),
    ("audit", "--policy", "policies/team-a.yaml", "--baseline", "audits/team-a.json"),
    ("test", "policies/tests/"),
])
def test_sarif_validates_against_the_sarif_2_1_0_object_model(cli, tmp_path: Path, args) -> None:
    from sarif_pydantic import Sarif  # pydantic models of the SARIF 2.1.0 schema

    out = tmp_path / "out.sarif"
    cli(*args, "--format", "sarif", "--out", out)
    log = Sarif.model_validate(json.loads(out.read_text()))
    assert log.version == "2.1.0" and log.runs[0].tool.driver.name == "memsolve"


def test_github_annotations(cli) -> None:
    out = cli("check", "policies/team-a.yaml", "--format", "github").stdout
    assert out == ("::warning file=policies/team-a.yaml,line=21,title=MS001::policies/team-a.yaml: sessions: "
                   "excludes nothing on these 33 records\n")


# --- explain -----------------------------------------------------------------------------


def _records():
    return memsolve.load_records([
        {"id": "a", "timestamp": 0, "representations": {"raw": {"tokens": 6, "utility": 6.0},
                                                       "summary": {"tokens": 3, "utility": 4.0}}},
        {"id": "b", "timestamp": 0, "representations": {"raw": {"tokens": 5, "utility": 7.0},
                                                       "summary": {"tokens": 2, "utility": 3.0}}},
        {"id": "c", "timestamp": 0, "tokens": 4, "utility": 4.5},
    ])


@pytest.mark.parametrize("record_id", ["a", "b", "c"])
def test_explain_utility_thresholds_hold_at_plus_minus_a_step(record_id: str) -> None:
    policy = make_policy()
    context = memsolve.Context(now=0, budget=8)
    ex = explain(policy, _records(), record_id, context)
    prep = pipeline.prepare(policy, _records(), context)
    row = [r.id for r in prep.compiled.records].index(record_id)
    for level, delta in ex.utility_thresholds.items():
        if delta is None:
            continue
        j = prep.compiled.levels.index(level)
        for step, enters in ((1e-3, True), (-1e-3, False)):
            if delta + step < 0:
                continue
            utility = prep.compiled.instance.utility.copy()
            utility[row, j] += delta + step
            inst = replace(prep.compiled.instance, utility=utility)
            choice = engines.run(inst, "dp", "none", compare_greedy=False).solution.choice
            assert bool(choice[row] == j) == enters, (level, delta, step)


@pytest.mark.parametrize("record_id", ["a", "b", "c"])
def test_explain_budget_thresholds_are_the_smallest_budgets(record_id: str) -> None:
    policy = make_policy()
    ex = explain(policy, _records(), record_id, memsolve.Context(now=0, budget=8))
    for level, budget in ex.budget_thresholds.items():
        if budget is None:
            continue
        at = pipeline.solve(policy, _records(), memsolve.Context(now=0, budget=budget))
        assert (record_id, level) in {(s.id, s.level) for s in at.selected}
        if budget > 0:
            below = pipeline.solve(policy, _records(), memsolve.Context(now=0, budget=budget - 1))
            assert (record_id, level) not in {(s.id, s.level) for s in below.selected}


def test_explain_shadow_price_and_excluded(cli) -> None:
    ex = explain(make_policy(), _records(), "a", memsolve.Context(now=0, budget=8))
    assert ex.shadow_price["gain_one_more_token"] >= 0 and ex.shadow_price["loss_one_less_token"] >= 0
    out = cli("explain", "old-review", "--policy", "policies/ch15.yaml", "--records", "examples/ch15/base.json")
    assert out.exit_code == 0
    assert "[FAIL] version-authority: authority bound to v1, current is v2" in out.stdout
    data = json.loads(cli("explain", "review-v2", "--policy", "policies/ch15.yaml", "--records",
                          "examples/ch15/changed.json", "--format", "json").stdout)
    assert data["outcome"] == "dropped"
    assert data["what_would_change_it"]["smallest_budget"] == {"raw": 4}
    assert cli("explain", "nope", "--policy", "policies/ch15.yaml", "--records",
               "examples/ch15/base.json").exit_code == 2


# --- policy tests ------------------------------------------------------------------------


def test_policy_tests_pass_and_fail(cli, tmp_path: Path) -> None:
    ok = cli("test", "policies/tests/")
    assert ok.exit_code == 0 and ok.stdout.strip().endswith("4 passed, 0 failed")
    failing = write(tmp_path, "t.yaml", f"""apiVersion: memsolve/v1
kind: PolicyTest
metadata: {{name: wrong}}
policy: {ROOT / 'policies/ch15.yaml'}
records: {ROOT / 'examples/ch15/base.json'}
cases:
  - name: old review is selected
    expect:
      old-review: {{outcome: selected}}
  - name: summary is selected
    expect:
      summary: {{outcome: selected, level: raw}}
""")
    result = cli("test", failing, "--format", "junit")
    assert result.exit_code == 1
    root = ET.fromstring(result.stdout)
    assert root.get("tests") == "2" and root.get("failures") == "1"
    plain = cli("test", failing, "--format", "json")
    findings = json.loads(plain.stdout)["findings"]
    assert json.loads(plain.stdout)["summary"] == "1 passed, 1 failed"
    assert findings[0]["message"].startswith("`old-review`: expected outcome `selected`, got `excluded`")


def test_policy_test_file_errors(cli, tmp_path: Path) -> None:
    bad = write(tmp_path, "t.yaml", "apiVersion: memsolve/v1\nkind: PolicyTest\nmetadata: {name: x}\n"
                                    "policy: p.yaml\nrecords: []\ncases:\n  - name: c\n    expekt: {}\n")
    result = cli("test", bad)
    assert result.exit_code == 2 and f"{bad}:7:5" in result.stderr


# --- diff and check ----------------------------------------------------------------------


def test_diff_verdicts(cli) -> None:
    looser = json.loads(cli("diff", "policies/team-a.yaml", "policies/team-a-next.yaml", "--format", "json").stdout)
    assert looser["overall"] == "looser"
    assert looser["rules"]["freshness"] == "looser" and looser["rules"]["max-age"] == "looser"
    assert looser["rules"]["tenant"] == "equivalent"
    assert {c["id"] for c in looser["changes"]} >= {"a-incident-2025", "a-working-stale"}
    stricter = json.loads(cli("diff", "policies/team-a-next.yaml", "policies/team-a.yaml", "--format", "json").stdout)
    assert stricter["overall"] == "stricter"
    same = json.loads(cli("diff", "policies/team-a.yaml", "policies/team-a.yaml", "--format", "json").stdout)
    assert same["overall"] == "equivalent" and same["changes"] == []


def test_diff_incomparable_and_added() -> None:
    from memsolve.ci.diff import compare_sets

    assert compare_sets({"a"}, {"b"}) == "incomparable"
    assert compare_sets(set(), {"a"}) == "stricter"


def test_check_lint_codes(cli, tmp_path: Path) -> None:
    head = "apiVersion: memsolve/v1\nkind: MemoryPolicy\nmetadata: {name: lint}\nbudget: {tokens: 1}\n"
    policy = write(tmp_path, "p.yaml", head + "utility: {from: relevance}\nrules:\n"
                   "  - stores: {allow: []}\n  - max_age: 10\n  - freshness: {default_ttl: 20}\n"
                   "  - sessions: {include_previous: false}\n")
    result = cli("check", policy, "--format", "json")
    assert result.exit_code == 1  # MS003 and MS007 are errors
    codes = sorted(f["code"] for f in json.loads(result.stdout)["findings"] if not f["passed"])
    assert codes == ["MS002", "MS003", "MS005", "MS007"]
    records = write(tmp_path, "r.json", [{"id": "x", "timestamp": 0, "tokens": 5, "utility": 1}])
    relevant = write(tmp_path, "q.yaml", head + "context: {now: 0}\nrules:\n  - relevance: {}\n  - max_age: 10\n")
    found = json.loads(cli("check", relevant, "--records", records, "--format", "json").stdout)["findings"]
    assert sorted(f["code"] for f in found if not f["passed"]) == ["MS001", "MS001", "MS004", "MS006"]
    broken = write(tmp_path, "b.yaml", head + "rules: [{max-age: 1}]\n")
    failed = cli("check", broken, "--format", "json")
    assert failed.exit_code == 1
    assert [f["code"] for f in json.loads(failed.stdout)["findings"]] == ["MS000"]
