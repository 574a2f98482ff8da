"""Findings rendered for CI: JUnit XML, SARIF 2.1.0 (checked against its object model) and
GitHub annotations, from audit, check and test."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from .helpers import policy_copy


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
    assert out == ("::warning file=policies/team-a.yaml,line=18,title=MS001::policies/team-a.yaml: sessions: "
                   "excludes nothing on these 33 records\n")
