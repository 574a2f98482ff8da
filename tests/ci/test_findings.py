"""Findings rendered for CI: JUnit XML, SARIF 2.1.0 (checked against the OASIS schema and its
object model), GitHub annotations and the table, from audit, check and test."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from memsolve.ci.codes import BY_ID, CODES
from memsolve.ci.findings import Finding, junit, sarif, stopped
from memsolve.errors import InputError, Location, SolverError

from ..conftest import ROOT
from .helpers import mistype_a_test_rule, policy_copy, sarif_schema, sarif_schema_check


def test_junit_is_well_formed(cli, tmp_path: Path) -> None:
    changed = policy_copy(tmp_path, lambda s: s.replace("max_age: 720", "max_age: 1000"))
    xml = cli("audit", "--policy", changed, "--baseline", "audits/team-a.json", "--format", "junit").stdout
    root = ET.fromstring(xml)
    assert root.tag == "testsuites" and int(root.get("failures")) >= 1
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert set(suites) == {"audit", "invariants"}
    cases = suites["audit"].findall("testcase")
    assert int(suites["audit"].get("tests")) == len(cases) == 22  # team-a's records; the other 11 are counted only
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
    assert out == ("::warning file=policies/team-a.yaml,line=18,col=5,title=MS001::policies/team-a.yaml: sessions: "
                   "excludes nothing on these 33 records\n")


def test_junit_fails_only_what_fails_the_run(cli) -> None:
    run = cli("check", "policies/team-a.yaml", "--format", "junit")
    assert run.exit_code == 0  # a warning passes the run ...
    root = ET.fromstring(run.stdout)
    assert root.get("failures") == "0" and root.find(".//failure") is None  # ... and the report says so
    warned = [c for c in root.iter("testcase") if c.find("properties") is not None]
    assert len(warned) == 1
    props = {p.get("name"): p.get("value") for p in warned[0].iter("property")}
    assert props == {"level": "warning", "code": "MS001", "location": "policies/team-a.yaml:18:5"}
    assert warned[0].findtext("system-out") == ("warning: policies/team-a.yaml:18:5: excludes nothing on these "
                                                "33 records")


def test_junit_counts_errors_as_failures() -> None:
    findings = [Finding("check", "a", False, "bad", "MS003"), Finding("check", "b", False, "meh", "MS001", "warning"),
                Finding("check", "c", True, code="MS000")]
    root = ET.fromstring(junit(findings))
    assert root.get("tests") == "3" and root.get("failures") == "1"
    assert [c.get("name") for c in root.iter("testcase") if c.find("failure") is not None] == ["a"]


@sarif_schema_check
def test_sarif_validates_against_the_oasis_schema_with_every_rule_described(tmp_path: Path, cli) -> None:
    import jsonschema

    changed = policy_copy(tmp_path, lambda s: s.replace("max_age: 720", "max_age: 1000"))
    log = json.loads(cli("audit", "--policy", changed, "--baseline", "audits/team-a.json", "--format",
                         "sarif").stdout)
    jsonschema.Draft4Validator(sarif_schema()).validate(log)  # the OASIS SARIF 2.1.0 JSON schema
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == [c.id for c in CODES]  # every MS code and every audit finding kind
    for rule in rules:
        assert rule["name"] and rule["shortDescription"]["text"] and rule["fullDescription"]["text"]
        assert rule["help"]["text"] and rule["helpUri"].endswith("README.md#" + rule["id"].lower())
    results = log["runs"][0]["results"]
    assert results and all(rules[r["ruleIndex"]]["id"] == r["ruleId"] for r in results)


def test_every_code_has_its_row_in_the_readme() -> None:
    readme = (ROOT / "README.md").read_text()
    for code in CODES:
        assert f'<a id="{code.anchor}"></a>`{code.id}`' in readme, code.id


def test_sarif_locates_findings_relative_to_the_repository() -> None:
    inside = Finding("audit", "x", False, "m", "changed-outcome", location=Location(str(ROOT / "policies/../x.yaml"),
                                                                                      3, 2))
    outside = Finding("audit", "y", False, "m", "changed-outcome", location=Location("/elsewhere/y.yaml", 4))
    results = json.loads(sarif([inside, outside], "0"))["runs"][0]["results"]
    assert results[0]["locations"][0]["physicalLocation"] == {"artifactLocation": {"uri": "x.yaml"},
                                                              "region": {"startLine": 3, "startColumn": 2}}
    assert results[1]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "/elsewhere/y.yaml"


def test_audit_findings_point_at_the_rule_or_the_record(cli, tmp_path: Path) -> None:
    changed = policy_copy(tmp_path, lambda s: s.replace("max_age: 720", "max_age: 1000"))
    report = json.loads(cli("audit", "--policy", changed, "--baseline", "audits/team-a.json", "--format",
                            "json").stdout)
    where = {f["name"]: f["location"] for f in report["findings"] if not f["passed"]}
    policy_lines = changed.read_text().splitlines()
    # excluded by max-age before: at the max_age rule's line of the changed policy
    rule = where["a-incident-2025"]
    assert rule["file"] == str(changed) and policy_lines[rule["line"] - 1].strip().startswith("- max_age:")
    # an allocation change (no rule decides it): at the record's own line in the records file
    moved = [name for name, loc in where.items() if loc["file"].endswith("shared.json")]
    assert moved
    records = (ROOT / "examples/shared.json").read_text().splitlines()
    for name in moved:
        assert f'"{name}"' in records[where[name]["line"] - 1]
    invariants = {f["name"]: f["location"] for f in report["findings"] if f["suite"] == "invariants"}
    budget = invariants["invariant-budget"]
    assert policy_lines[budget["line"] - 1].lstrip().startswith(("budget:", "tokens:"))


def test_tables_wrap_the_message_and_never_cut_the_location(tmp_path: Path) -> None:
    from memsolve.render import capture, findings_table

    deep = tmp_path / "a-rather-long-folder-name" / "policies" / "team-a-next-with-a-long-name.yaml"
    findings = [Finding("audit", "a-record-with-a-long-id", False, "selected at raw -> dropped (not among the best "
                        "12 records (count limit))", "changed-outcome", location=Location(str(deep), 123, 45))]
    text = capture(findings_table, findings)
    assert "…" not in text
    assert f"│ {deep}:123:45 │" in text  # whole, on one line
    assert "│ selected at raw -> " in text and "│ a0/" not in text  # the message wraps, the location does not


def test_the_tests_the_ci_modules_cite_exist() -> None:
    # a docstring that names the test holding it to something must name one that exists
    import re

    cited = []
    for module in sorted((ROOT / "src/memsolve/ci").glob("*.py")):
        for path, name in re.findall(r"(tests/[\w/]+\.py)(?:::(\w+))?", module.read_text()):
            cited.append((module.name, path, name))
            assert (ROOT / path).is_file(), f"{module.name} cites {path}, which does not exist"
            if name:
                assert re.search(rf"^def {name}\(", (ROOT / path).read_text(), re.M), f"{module.name}: {path}::{name}"
    assert ("codes.py", "tests/ci/test_findings.py", "test_every_code_has_its_row_in_the_readme") in cited


def test_an_input_error_is_in_every_report_asked_for(cli, tmp_path: Path) -> None:
    bad, line, column = mistype_a_test_rule(tmp_path, str(ROOT / "policies/team-a.yaml"),
                                            str(ROOT / "examples/shared.json"))
    out = {fmt: tmp_path / f"out.{fmt}" for fmt in ("sarif", "junit", "json")}
    result = cli("test", bad, "--format", "github", *(a for fmt, path in out.items() for a in ("--report",
                                                                                              f"{fmt}={path}")))
    error = f"{bad}:{line}:{column}: cases[2].expect.a-db-arch-old.rule: unknown rule `latestkey`; did you mean " \
            "`latest-key`?"
    assert result.exit_code == 2 and result.stdout == ""  # an input error: exit 2, nothing on stdout
    assert result.stderr.endswith(f"error: {error}\n")
    # GitHub reads workflow commands from stderr too
    assert f"::error file={bad},line={line},col={column},title=input-error::{bad}: cases[2]." in result.stderr

    log = json.loads(out["sarif"].read_text())
    (found,) = log["runs"][0]["results"]
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    assert found["ruleId"] == "input-error" and rules[found["ruleIndex"]]["id"] == "input-error"
    assert found["level"] == "error" and "unknown rule `latestkey`" in found["message"]["text"]
    assert found["locations"][0]["physicalLocation"] == {"artifactLocation": {"uri": str(bad)},
                                                         "region": {"startLine": line, "startColumn": column}}
    root = ET.parse(out["junit"]).getroot()
    assert root.get("tests") == root.get("failures") == "1"
    assert root.find(".//failure").text == error  # the error line itself
    assert json.loads(out["json"].read_text())["summary"] == "test: stopped by an error (exit 2)"


def test_an_input_error_without_a_line_is_reported_at_its_file(cli, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-baseline.json"
    report = tmp_path / "out.xml"
    result = cli("audit", "--policy", "policies/team-a.yaml", "--baseline", missing, "--format", "github",
                 "--report", f"junit={report}")
    assert result.exit_code == 2 and result.stdout == ""
    assert f"::error file={missing},title=input-error::{missing}: file not found\n" in result.stderr
    assert ET.parse(report).getroot().find(".//failure").text == f"{missing}: file not found"


def test_a_report_is_never_written_over_an_input(cli, tmp_path: Path) -> None:
    bad, _, _ = mistype_a_test_rule(tmp_path)
    before = bad.read_text()
    result = cli("test", bad, "--report", f"sarif={bad}", "--force")
    assert result.exit_code == 2 and "name the same file" in result.stderr
    assert bad.read_text() == before


def test_a_stopping_error_is_one_finding_of_its_own_code() -> None:
    located = stopped("audit", InputError("bad", Location("p.yaml", 3, 4, "rules[0]")))
    assert (located.passed, located.code, located.name, located.message) == (False, "input-error", "p.yaml",
                                                                              "rules[0]: bad")
    assert located.location == Location("p.yaml", 3, 4, "rules[0]")
    solver = stopped("audit", SolverError("the engines disagree"))
    assert (solver.code, solver.name, solver.message, solver.location) == ("solver-error", "audit",
                                                                           "the engines disagree", None)
    assert BY_ID["input-error"].level == BY_ID["solver-error"].level == "error"
