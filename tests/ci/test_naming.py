"""One name for a rule everywhere (the id traces show), with did-you-mean on a miss; the policy-test
schema for editors; extra report files from one run; ``frontier --plot`` alone."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from memsolve import schemas

from ..conftest import ROOT, needs, write

TEAM_A = ("--policy", "policies/team-a.yaml")


def _max_age(result_json: str) -> set:
    trace = json.loads(result_json)["trace"]
    return {r["evidence"].get("max_age") for t in trace for r in t["rules"] if r["rule"] == "max-age"}


@pytest.mark.parametrize("key", ["rules.max-age", "rules.max_age"])
def test_set_addresses_a_rule_by_its_trace_id_or_type(cli, key: str) -> None:
    before = cli(*TEAM_A, "--format", "json")
    after = cli(*TEAM_A, "--set", f"{key}=5", "--format", "json")
    assert after.exit_code == 0, after.stderr
    assert _max_age(before.stdout) != _max_age(after.stdout)
    assert _max_age(before.stdout) == {720} and _max_age(after.stdout) == {5}


def test_set_by_an_id_the_author_gave(cli, tmp_path: Path) -> None:
    text = (ROOT / "policies/team-a.yaml").read_text().replace("  - max_age: 720", "  - id: month\n    max_age: 720")
    text = text.replace("records: ../examples/shared.json", f"records: {ROOT / 'examples/shared.json'}")
    policy = write(tmp_path, "p.yaml", text)
    ran = cli("--policy", policy, "--set", "rules.month=5", "--format", "json")
    assert ran.exit_code == 0, ran.stderr
    assert any(r["rule"] == "month" for t in json.loads(ran.stdout)["trace"] for r in t["rules"])


def test_set_suggests_the_closest_rule_id(cli) -> None:
    miss = cli(*TEAM_A, "--set", "rules.maxage=5")
    assert miss.exit_code == 2 and miss.stdout == ""
    assert miss.stderr == ("error: policies/team-a.yaml: rules.maxage: --set rules.maxage: unknown rule `maxage`; "
                           "did you mean `max-age`? (the ids traces show)\n")
    explain = cli("explain", "a-incident-2025", *TEAM_A, "--set", "rules.max-age=100000")
    assert explain.exit_code == 0 and "max-age" in explain.stdout


def _policy_test(tmp_path: Path, rule: str) -> Path:
    data = yaml.safe_load((ROOT / "policies/tests/team-a.yaml").read_text())
    data["policy"] = str(ROOT / "policies/team-a.yaml")
    data["records"] = str(ROOT / "examples/shared.json")
    data["cases"][0]["expect"]["a-approval-v2"]["rule"] = rule
    return write(tmp_path, "t.yaml", yaml.safe_dump(data, sort_keys=False))


def test_policy_tests_name_rules_as_traces_do(cli, tmp_path: Path) -> None:
    miss = cli("test", _policy_test(tmp_path, "version_authority"))
    assert miss.exit_code == 2
    assert "unknown rule `version_authority`; did you mean `version-authority`?" in miss.stderr
    assert miss.stderr.startswith(f"error: {tmp_path / 't.yaml'}:") and miss.stderr.count("\n") == 1
    assert cli("test", _policy_test(tmp_path, "version-authority")).exit_code == 0


def test_the_policy_test_schema_accepts_the_bundled_tests_and_names_mistakes() -> None:
    schema = schemas.load_schema("policy-test")
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for path in (ROOT / "policies/tests").glob("*.yaml"):
        text = path.read_text()
        assert "$schema=../../src/memsolve/schemas/policy-test.schema.json" in text.splitlines()[0]
        validator.validate(yaml.safe_load(text))
    bad = yaml.safe_load((ROOT / "policies/tests/team-a.yaml").read_text())
    bad["cases"][0]["expect"]["a-approval-v2"]["outcome"] = "kept"
    assert not validator.is_valid(bad)
    assert not jsonschema.Draft202012Validator(schemas.load_schema("policy")).is_valid(
        yaml.safe_load((ROOT / "policies/tests/team-a.yaml").read_text()))  # why it needs its own


def test_one_run_writes_every_report(cli, tmp_path: Path) -> None:
    sarif, junit = tmp_path / "c.sarif", tmp_path / "c.xml"
    ran = cli("check", "policies/team-a.yaml", "--format", "github", "--report", f"sarif={sarif}",
              "--report", f"junit={junit}")
    assert ran.exit_code == 0 and ran.stdout.startswith("::warning ")
    assert sarif.read_text() == cli("check", "policies/team-a.yaml", "--format", "sarif").stdout
    assert junit.read_text() == cli("check", "policies/team-a.yaml", "--format", "junit").stdout
    again = cli("check", "policies/team-a.yaml", "--report", f"sarif={sarif}")
    assert again.exit_code == 2 and "--force" in again.stderr  # never overwritten silently
    bad = cli("check", "policies/team-a.yaml", "--report", "pdf=x.pdf")
    assert bad.exit_code == 2 and bad.stderr.count("\n") == 1 and "FORMAT=FILE" in bad.stderr


@needs(importlib.util.find_spec("matplotlib") is not None, "matplotlib (the plot extra)")
def test_frontier_plot_alone_prints_one_line(cli, tmp_path: Path) -> None:
    plot = tmp_path / "f.svg"
    ran = cli("frontier", *TEAM_A, "--plot", plot)
    assert ran.exit_code == 0 and plot.exists()
    assert ran.stdout.count("\n") == 1 and ran.stdout.endswith(f"plot written to {plot}\n")
    both = cli("frontier", *TEAM_A, "--plot", plot, "--force", "--format", "json")
    assert json.loads(both.stdout)["frontier"][0] == {"budget": 0, "objective": 0.0}
