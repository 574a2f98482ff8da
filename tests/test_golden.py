"""Golden outputs of every bundled example, captured before the code was restructured.

Each line of tests/data/golden/commands.txt is one ``memsolve`` command; its stdout, stderr and
exit code must match ``NAME.out`` byte for byte. A stateful sequence (three rounds, then the
operators' views) is checked the same way. ``MEMSOLVE_GOLDEN_WRITE=1`` rewrites the files, for a
deliberate change of output that the commit then explains.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest

from .conftest import DATA, Cli

GOLDEN = DATA / "golden"
WRITE = os.environ.get("MEMSOLVE_GOLDEN_WRITE") == "1"


def _commands() -> list[tuple[str, list[str]]]:
    out = []
    for line in (GOLDEN / "commands.txt").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, args = line.partition(" | ")
            out.append((name.strip(), shlex.split(args)))
    return out


def _render(result) -> str:
    return f"exit {result.exit_code}\n--- stdout\n{result.stdout}--- stderr\n{result.stderr}"


def _check(name: str, text: str) -> None:
    path = GOLDEN / f"{name}.out"
    if WRITE:
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"no golden file {path.name}"
    assert text == path.read_text(encoding="utf-8"), f"{name}: output differs from {path.name}"


@pytest.mark.parametrize(("name", "args"), _commands(), ids=[name for name, _ in _commands()])
def test_golden_command(cli: Cli, name: str, args: list[str]) -> None:
    _check(name, _render(cli(*args)))


def test_golden_state_sequence(cli: Cli, tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    round_ = ["--policy", "policies/team-a.yaml", "--state", db, "--agent", "planner", "--format", "json"]
    steps = [
        ("state-round-1", round_),
        ("state-round-2", [*round_, "--set", "budget.tokens=200"]),
        ("state-round-3", [*round_, "--refresh"]),
        ("state-show-json", ["state", "show", "--state", db, "--agent", "planner", "--policy",
                             "policies/team-a.yaml", "--format", "json"]),
        ("state-show-table", ["state", "show", "--state", db, "--agent", "planner", "--policy",
                              "policies/team-a.yaml"]),
        ("state-export", ["state", "export", "--state", db]),
    ]
    for name, args in steps:
        _check(name, _render(cli(*args)).replace(str(tmp_path), "<tmp>"))
