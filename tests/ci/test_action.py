"""The GitHub composite action (action.yml): its run steps executed as the runner executes them
(inputs and ``github.action_path`` substituted, ``bash --noprofile --norc -eo pipefail``, a
``GITHUB_OUTPUT`` file, the workspace as working directory) on a temporary policy repository,
green as committed and red with the finding at its line once a rule changes.

The install step runs for real into a fresh virtual environment from the action's own checkout;
``install-args`` keep it offline (no index, no build isolation: the environment reaches the
dependencies and the build backend through a path entry).
"""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

import memsolve

from ..conftest import ROOT, needs
from .helpers import (
    ISOLATED,
    deps_venv,
    loosen_max_age,
    mistype_a_test_rule,
    run,
    sarif_schema,
    sarif_schema_check,
    source_copy,
    team_repo,
)

ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
pytestmark = needs(shutil.which("bash") is not None, "bash")


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The action's checkout and a fresh environment that its install step (run here, once, as
    the runner runs it) has installed memsolve into."""
    root = tmp_path_factory.mktemp("action")
    runner = {"action_path": source_copy(root / "action"), "python": deps_venv(root / "venv"), "root": root}
    workspace = root / "workspace"
    workspace.mkdir()
    code, _, printed = run_action(runner, workspace, _inputs(runner), steps=slice(0, 1))
    assert code == 0, printed
    assert f"memsolve {memsolve.__version__} (numpy kernel: not compiled at install)" in printed  # no compiler here
    where = run(runner["python"], "-c", "import memsolve; print(memsolve.__file__)").stdout
    assert Path(where.strip()).is_relative_to(root / "venv")  # installed from the checkout, not this one
    return runner


def _substitute(text: str, values: dict[str, str]) -> str:
    def one(match: re.Match) -> str:
        return values[match.group(1)]

    return re.sub(r"\$\{\{\s*([\w.-]+)\s*\}\}", one, text)


def run_action(runner: dict, workspace: Path, inputs: dict[str, str],
               steps: slice = slice(1, None)) -> tuple[int, dict[str, str], str]:
    """The steps in order (by default all but the install, which the fixture ran), as the runner
    would; stops at the first failing step. Returns the last exit status, the action's outputs
    and what the steps printed."""
    given = {name: str(spec.get("default", "")) for name, spec in ACTION["inputs"].items()}
    unknown = set(inputs) - set(given)
    assert not unknown, f"not inputs of the action: {unknown}"
    given.update(inputs)
    values = {f"inputs.{k}": v for k, v in given.items()} | {"github.action_path": str(runner["action_path"]),
                                                            "github.workspace": str(workspace)}
    step_outputs: dict[str, dict[str, str]] = {}
    printed = []
    code = 0
    for index, step in list(enumerate(ACTION["runs"]["steps"]))[steps]:
        assert step["shell"] == "bash"
        output = runner["root"] / f"output-{index}"
        output.write_text("")
        env = {**ISOLATED, **{k: _substitute(str(v), values) for k, v in step.get("env", {}).items()},
               "GITHUB_OUTPUT": str(output), "GITHUB_ACTION_PATH": str(runner["action_path"]),
               "GITHUB_WORKSPACE": str(workspace), "CC": str(runner["root"] / "no-such-cc")}
        script = runner["root"] / f"step-{index}.sh"
        script.write_text(_substitute(step["run"], values))
        proc = run("bash", "--noprofile", "--norc", "-eo", "pipefail", script, cwd=workspace, env=env, ok=False)
        printed.append(proc.stdout + proc.stderr)
        code = proc.returncode
        if "id" in step:
            step_outputs[step["id"]] = dict(line.split("=", 1) for line in output.read_text().splitlines())
        if code != 0:
            break
    outputs = {name: _substitute(spec["value"], {f"steps.{sid}.outputs.{k}": v for sid, outs in step_outputs.items()
                                                  for k, v in outs.items()})
               for name, spec in ACTION["outputs"].items()} if code in (0, 1) and step_outputs else {}
    return code, outputs, "".join(printed)


def _inputs(runner: dict) -> dict[str, str]:
    return {"python": str(runner["python"]), "install-args": "--no-index --no-build-isolation --quiet",
            "tests": "policies/tests/", "audits": "policies/team-a.yaml=audits/team-a.json\n"}


def test_the_action_declares_its_interface() -> None:
    assert set(ACTION["inputs"]) >= {"policies", "tests", "audits", "format"}
    assert set(ACTION["outputs"]) == {"failed", "sarif", "junit"}
    assert ACTION["runs"]["using"] == "composite"
    # inputs reach the scripts through env only (no ${{ }} inside a script: no script injection)
    assert all("${{" not in step["run"] for step in ACTION["runs"]["steps"])


def test_the_action_runs_green_then_red_at_the_changed_rule(runner: dict, tmp_path: Path) -> None:
    team = team_repo(tmp_path / "team")
    code, outputs, printed = run_action(runner, team, _inputs(runner))
    assert code == 0, printed
    assert outputs["failed"] == "false"
    assert "::warning file=policies/team-a.yaml,line=18,col=5,title=MS001::" in printed  # annotations in the log
    sarif = json.loads((team / outputs["sarif"]).read_text())
    results = sarif["runs"][0]["results"]
    assert len(sarif["runs"]) == 1 and results and all(r["level"] in ("warning", "note") for r in results)
    assert "MS001" in {r["ruleId"] for r in results}
    junit = ET.parse(team / outputs["junit"]).getroot()
    suites = {s.get("name") for s in junit.iter("testsuite")}
    assert suites == {"check", "test:team-a-basics", "audit", "invariants"}
    assert junit.get("failures") == "0" and int(junit.get("tests")) > 30

    line = loosen_max_age(team)
    code, outputs, printed = run_action(runner, team, _inputs(runner))
    assert code == 1 and outputs["failed"] == "true", printed
    assert f"::error file=policies/team-a.yaml,line={line},col=5,title=changed-outcome::a-incident-2025" in printed
    results = json.loads((team / outputs["sarif"]).read_text())["runs"][0]["results"]
    changed = [r for r in results if r["message"]["text"].startswith("a-incident-2025:")]
    assert changed[0]["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "policies/team-a.yaml"}, "region": {"startLine": line, "startColumn": 5}}
    junit = ET.parse(team / outputs["junit"]).getroot()
    assert int(junit.get("failures")) >= 1


def test_a_bad_audits_input_fails_with_one_line(runner: dict, tmp_path: Path) -> None:
    team = team_repo(tmp_path / "team")
    inputs = {**_inputs(runner), "tests": "", "audits": "policies/team-a.yaml"}
    code, outputs, printed = run_action(runner, team, inputs)
    assert code == 1 and outputs["failed"] == "true"
    assert "::error title=memsolve::audits expects POLICY=BASELINE pairs, got `policies/team-a.yaml`" in printed


def test_a_second_call_reports_only_itself(runner: dict, tmp_path: Path) -> None:
    # a failing audit first, then only a check of another policy in the same workspace and reports folder:
    # the second call's reports must not carry the first call's parts
    team = team_repo(tmp_path / "team")
    loosen_max_age(team)
    code, outputs, printed = run_action(runner, team, _inputs(runner))
    assert code == 1 and outputs["failed"] == "true", printed
    code, outputs, printed = run_action(runner, team, {**_inputs(runner), "policies": "policies/team-b.yaml",
                                                       "tests": "", "audits": ""})
    assert code == 0 and outputs["failed"] == "false", printed
    junit = ET.parse(team / outputs["junit"]).getroot()
    assert {s.get("name") for s in junit.iter("testsuite")} == {"check"}
    assert junit.get("failures") == "0" and junit.find(".//failure") is None
    results = json.loads((team / outputs["sarif"]).read_text())["runs"][0]["results"]
    assert all(r["level"] != "error" for r in results), results
    assert {loc["physicalLocation"]["artifactLocation"]["uri"] for r in results for loc in r["locations"]} <= {
        "policies/team-b.yaml", "examples/shared.json"}


def test_the_documented_workflow_uses_the_action_with_the_permissions_sarif_upload_needs() -> None:
    workflow = yaml.safe_load((ROOT / "docs/ci/github-actions.yml").read_text())
    # upload-sarif writes security events and, on a private repository, reads the run's actions
    assert workflow["permissions"] == {"contents": "read", "security-events": "write", "actions": "read"}
    steps = {step.get("id") or step.get("name") or step["uses"]: step for step in workflow["jobs"]["policies"]["steps"]}
    assert set(steps["memsolve"]["with"]) <= set(ACTION["inputs"])
    upload = steps["Upload SARIF to code scanning"]
    assert upload["uses"].startswith("github/codeql-action/upload-sarif@")
    assert upload["with"]["sarif_file"] == "${{ steps.memsolve.outputs.sarif }}"
    # the README's excerpt of the workflow asks for the same permissions
    readme = (ROOT / "README.md").read_text()
    excerpt = re.search(r"```yaml\n(permissions:.*?)```", readme, re.S)
    assert excerpt and yaml.safe_load(excerpt.group(1))["permissions"] == workflow["permissions"]


@pytest.fixture(scope="module")
def stopped_run(runner: dict, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The action on a repository where the audit finds a change, the policy test names an unknown
    rule and a second audit's baseline path is mistyped: two commands stop with exit 2."""
    team = team_repo(tmp_path_factory.mktemp("stopped") / "team")
    changed_line = loosen_max_age(team)
    _, line, column = mistype_a_test_rule(team)
    audits = "policies/team-a.yaml=audits/team-a.json\npolicies/team-a.yaml=audits/team-x.json\n"
    code, outputs, printed = run_action(runner, team, {**_inputs(runner), "audits": audits})
    return {"team": team, "code": code, "outputs": outputs, "printed": printed, "test_error": (line, column),
            "changed_line": changed_line}


def test_a_command_stopped_by_an_input_error_is_in_the_reports(stopped_run: dict) -> None:
    team, outputs, printed = stopped_run["team"], stopped_run["outputs"], stopped_run["printed"]
    line, column = stopped_run["test_error"]
    assert stopped_run["code"] == 1 and outputs["failed"] == "true", printed
    test_error = (f"policies/tests/team-a.yaml:{line}:{column}: cases[2].expect.a-db-arch-old.rule: "
                  "unknown rule `latestkey`; did you mean `latest-key`?")
    assert f"error: {test_error}" in printed
    assert (f"::error file=policies/tests/team-a.yaml,line={line},col={column},title=input-error::"
            "policies/tests/team-a.yaml: cases[2].") in printed
    assert "::error file=audits/team-x.json,title=input-error::audits/team-x.json: file not found" in printed

    results = json.loads((team / outputs["sarif"]).read_text())["runs"][0]["results"]
    stops = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]: r for r in results
             if r["ruleId"] == "input-error"}
    assert set(stops) == {"policies/tests/team-a.yaml", "audits/team-x.json"}
    assert all(r["level"] == "error" for r in stops.values())
    assert stops["policies/tests/team-a.yaml"]["locations"][0]["physicalLocation"]["region"] == {
        "startLine": line, "startColumn": column}
    assert "changed-outcome" in {r["ruleId"] for r in results}  # the first audit, which ran, is there too

    junit = ET.parse(team / outputs["junit"]).getroot()
    failures = {c.get("classname"): c.find("failure") for c in junit.iter("testcase") if c.find("failure") is not None}
    assert failures["test"].text == test_error and failures["test"].get("type") == "input-error"
    assert int(junit.get("failures")) == sum(int(s.get("failures")) for s in junit.iter("testsuite")) >= 3


@sarif_schema_check
def test_the_merged_sarif_log_passes_the_sarif_2_1_0_schema(stopped_run: dict) -> None:
    import jsonschema

    log = json.loads((stopped_run["team"] / stopped_run["outputs"]["sarif"]).read_text())
    jsonschema.Draft4Validator(sarif_schema()).validate(log)  # the OASIS SARIF 2.1.0 JSON schema
    assert {"changed-outcome", "input-error"} <= {r["ruleId"] for r in log["runs"][0]["results"]}
