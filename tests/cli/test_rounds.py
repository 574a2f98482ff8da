"""state show, export and reset on the command line."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import ROOT


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


# --- a corrupt state file: one line, exit 2, the file byte-identical ----------------------

def _real_state(cli, tmp_path: Path) -> Path:
    db = tmp_path / "s.db"
    for agent in ("a", "a", "a", "b"):
        assert cli("--policy", "policies/team-a.yaml", "--state", db, "--agent", agent).exit_code == 0
    return db


def _pages(db: Path) -> dict[str, int]:
    """Each table's and index's root page."""
    conn = sqlite3.connect(db)
    try:
        return dict(conn.execute("SELECT name, rootpage FROM sqlite_master"))
    finally:
        conn.close()


def _damage(db: Path, page: int, offset: int, size: int = 64, byte: int = 0xA5) -> bytes:
    """Overwrite ``size`` bytes at ``offset`` of a page (never the file header); the new bytes."""
    page_size = sqlite3.connect(db).execute("PRAGMA page_size").fetchone()[0]
    data = bytearray(db.read_bytes())
    start = (page - 1) * page_size + offset
    assert start >= 100 and start + size <= len(data)
    data[start:start + size] = bytes([byte]) * size
    db.write_bytes(bytes(data))
    return bytes(data)


COMMANDS = {
    "solve": ["--policy", "policies/team-a.yaml", "--state", "{db}", "--agent", "a"],
    "solve-dry-run": ["--policy", "policies/team-a.yaml", "--state", "{db}", "--agent", "a", "--dry-run"],
    "show": ["state", "show", "--state", "{db}", "--agent", "a", "--policy", "policies/team-a.yaml"],
    "show-json": ["state", "show", "--state", "{db}", "--agent", "b", "--format", "json"],
    "export": ["state", "export", "--state", "{db}"],
    "reset": ["state", "reset", "--state", "{db}", "--agent", "a", "--yes"],
}
TABLES = ["agents", "ceilings", "history", "memsolve_meta", "sqlite_autoindex_agents_1"]


def _run(cli, name: str, db: Path):
    return cli(*[str(db) if a == "{db}" else a for a in COMMANDS[name]])


@pytest.mark.parametrize("table", TABLES)
@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_corrupt_page_is_one_line_and_the_file_is_left_untouched(cli, tmp_path: Path, name: str,
                                                                    table: str) -> None:
    db = _real_state(cli, tmp_path)
    damaged = _damage(db, _pages(db)[table], offset=0)  # the page's b-tree header and cell pointers
    before = hashlib.sha256(damaged).hexdigest()
    result = _run(cli, name, db)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr == f"error: {db}: state file is corrupt (database disk image is malformed); left untouched\n"
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.db"]  # no journal left behind


@pytest.mark.parametrize("table", ["agents", "ceilings", "history"])
@pytest.mark.parametrize("byte", [0x00, 0x7F, 0xFF])
def test_damaged_cells_give_a_result_or_one_line(cli, tmp_path: Path, table: str, byte: int) -> None:
    """Bytes overwritten in the middle of a page's cells: whatever SQLite makes of them (a
    malformed page, text that is not UTF-8, a value of another type), every command either works
    or prints one line and leaves the file as it was; no stored value is quoted."""
    db = _real_state(cli, tmp_path)
    page = _pages(db)[table]
    with sqlite3.connect(db) as conn:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    header = db.read_bytes()[(page - 1) * page_size:][:12]
    content = int.from_bytes(header[5:7], "big") or 65536  # where the cells start
    original = db.read_bytes()
    for offset in sorted({content + 8, (content + page_size) // 2, page_size - 40}):
        for name in COMMANDS:
            db.write_bytes(original)
            damaged = _damage(db, page, offset, size=24, byte=byte)
            result = _run(cli, name, db)
            if result.exit_code != 0:
                assert result.exit_code == 2 and result.stdout == "", result.output
                assert result.stderr.startswith(f"error: {db}: ") and result.stderr.count("\n") == 1
                assert "corrupt" in result.stderr and "left untouched" in result.stderr
                assert "a-" not in result.stderr.split(": ", 2)[2]  # no record id or stored text quoted
                assert db.read_bytes() == damaged


def test_corrupt_state_from_a_real_process(cli, tmp_path: Path) -> None:
    db = _real_state(cli, tmp_path)
    damaged = _damage(db, _pages(db)["history"], offset=0)
    for args in (["--policy", "policies/team-a.yaml", "--state", db, "--agent", "a"],
                 ["state", "export", "--state", db]):
        proc = subprocess.run([sys.executable, "-m", "memsolve", *map(str, args)], capture_output=True, text=True,
                              cwd=ROOT)
        assert proc.returncode == 2 and proc.stdout == ""
        assert proc.stderr == f"error: {db}: state file is corrupt (database disk image is malformed); left untouched\n"
        assert db.read_bytes() == damaged


def test_a_tenants_state_export_holds_nothing_of_other_tenants(tmp_path: Path, cli) -> None:
    db = tmp_path / "s.db"
    for policy in ("team-a", "team-b"):
        round_ = cli("--policy", f"policies/{policy}.yaml", "--session", "s-17", "--state", db, "--agent", "bot",
                     "--format", "json")
        assert round_.exit_code == 0
    whole = json.loads(cli("state", "export", "--state", db).stdout)
    assert {a["tenant"] for a in whole["agents"]} == {"team-a", "team-b"}
    mine = cli("state", "export", "--state", db, "--tenant", "team-a").stdout
    assert {a["tenant"] for a in json.loads(mine)["agents"]} == {"team-a"}
    assert "team-b" not in mine and '"b-' not in mine
