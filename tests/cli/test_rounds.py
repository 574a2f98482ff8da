"""state show, export and reset on the command line."""

from __future__ import annotations

import json
from pathlib import Path


def test_state_cli_show_export_reset(tmp_path: Path, cli) -> None:
    db = tmp_path / "s.db"
    base = ("--policy", "policies/team-a.yaml", "--state", db, "--agent", "planner")
    assert cli(*base).exit_code == 0
    assert cli(*base, "--refresh").exit_code == 0
    shown = cli("state", "show", "--state", db, "--agent", "planner", "--policy", "policies/team-a.yaml")
    assert shown.exit_code == 0 and "next round 3" in shown.stdout and "next lambda" in shown.stdout
    assert "a-sync-notes" in shown.stdout  # its ceiling: deleted
    data = json.loads(cli("state", "show", "--state", db, "--agent", "planner", "--format", "json").stdout)
    assert data["agents"][0]["round"] == 3
    exported = json.loads(cli("state", "export", "--state", db).stdout)
    assert exported["schema"] == "memsolve/state/v1" and len(exported["agents"][0]["history"]) == 2
    assert exported["agents"][0]["history"][1]["refresh"] is True
    assert cli("state", "reset", "--state", db, "--agent", "planner").exit_code == 2  # needs --yes
    assert cli("state", "reset", "--state", db, "--agent", "planner", "--yes").exit_code == 0
    assert json.loads(cli("state", "export", "--state", db).stdout)["agents"] == []
    assert cli("state", "show", "--state", tmp_path / "none.db", "--agent", "x").exit_code == 2
