"""Shared helpers: in-memory policies and records, and a CLI runner."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, settings

import memsolve
from memsolve.cli import main

ROOT = Path(__file__).resolve().parents[1]
IN_CI = os.environ.get("CI") == "true"
# CI replays the same examples on every run (a failure there is reproducible, never a dice roll).
# Neither profile fails a test for generating its examples slowly: on a busy two-core machine that
# says how busy the machine is, not whether the code is right.
_PATIENT = [HealthCheck.too_slow]
settings.register_profile("ci", derandomize=True, print_blob=True, suppress_health_check=_PATIENT)
settings.register_profile("dev", suppress_health_check=_PATIENT)
settings.load_profile("ci" if IN_CI else "dev")


def needs(present: bool, what: str) -> pytest.MarkDecorator:
    """Skip when a part of the machine is missing, but only outside CI: there it fails the run."""
    return pytest.mark.skipif(not present and not IN_CI, reason=f"needs {what}")
DATA = Path(__file__).resolve().parent / "data"


def make_policy(body: str = "", *, name: str = "test", rules: str = "") -> memsolve.Policy:
    """A policy from YAML fragments; ``rules`` is the text of the rule list items."""
    text = f"apiVersion: memsolve/v1\nkind: MemoryPolicy\nmetadata: {{name: {name}}}\n"
    text += textwrap.dedent(body)
    if rules:
        text += "rules:\n" + textwrap.indent(textwrap.dedent(rules), "  ")
    return memsolve.policy_from_text(text, "policy.yaml")


def rec(id: str, tokens: int = 1, utility: float = 1.0, timestamp: float = 0, **fields: Any) -> dict:
    return {"id": id, "tokens": tokens, "utility": utility, "timestamp": timestamp, **fields}


def solve(policy: memsolve.Policy, records: list | dict, **context: Any) -> memsolve.Result:
    return memsolve.solve(policy, memsolve.load_records(records), memsolve.Context(**context))


def outcome(result: memsolve.Result) -> dict[str, str]:
    """id → level for selected, `dropped`, or the excluding rule."""
    out = {s.id: s.level for s in result.selected}
    out.update({d.id: "dropped" for d in result.dropped})
    out.update({e.id: e.rule for e in result.excluded})
    return out


def write(tmp_path: Path, name: str, content: Any) -> Path:
    path = tmp_path / name
    if isinstance(content, (dict, list)):
        content = json.dumps(content, indent=2)
    path.write_text(content, encoding="utf-8")
    return path


class Cli:
    def __init__(self) -> None:
        self.runner = CliRunner()

    def __call__(self, *args: str):
        return self.runner.invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture
def cli() -> Cli:
    return Cli()


@pytest.fixture(autouse=True)
def _in_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
