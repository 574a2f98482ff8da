"""What every command shares: output files written atomically and never overwritten silently,
one-line errors from a real process, a clean exit on SIGTERM."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from ..conftest import ROOT, write

CH15 = ("--policy", "policies/ch15.yaml", "--records")


def test_out_is_written_atomically_and_never_overwritten_silently(cli, tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    assert cli(*CH15, "examples/ch15/base.json", "--format", "json", "--out", out).exit_code == 0
    first = out.read_text()
    assert json.loads(first)["objective"] == 11.0
    again = cli(*CH15, "examples/ch15/changed.json", "--format", "json", "--out", out)
    assert again.exit_code == 2 and "file exists" in again.stderr
    assert out.read_text() == first
    assert cli(*CH15, "examples/ch15/changed.json", "--format", "json", "--out", out, "--force").exit_code == 0
    assert json.loads(out.read_text())["objective"] == 3.0
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"]  # no temporary files left


def test_real_process_error_has_no_traceback(tmp_path: Path) -> None:
    bad = write(tmp_path, "p.yaml", "apiVersion: memsolve/v1\nkind: MemoryPolicy\nmetadata: {name: x}\nbudget: 3\n")
    proc = subprocess.run([sys.executable, "-m", "memsolve", "--policy", str(bad), "--records",
                           "examples/ch15/base.json"], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2
    assert proc.stderr == f"error: {bad}:4:9: budget: expected a mapping, got `3`\n"
    assert proc.stdout == ""


def test_sigterm_exits_cleanly_and_writes_nothing(tmp_path: Path) -> None:
    rounds = tmp_path / "rounds.jsonl"
    batch = [{"id": f"x{i}", "timestamp": 0, "tokens": 5, "utility": 1.0} for i in range(30)]
    rounds.write_text("\n".join(json.dumps({"now": 1, "records": [dict(r, id=f"{r['id']}-{t}") for r in batch]})
                                for t in range(400)) + "\n")
    out = tmp_path / "trajectory.json"
    proc = subprocess.Popen([sys.executable, "-m", "memsolve", "simulate", "--policy", "policies/conversation.yaml",
                             "--rounds-file", str(rounds), "--out", str(out), "--format", "json"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(2.5)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 143, stderr
    assert stderr == "error: terminated; nothing was written\n"
    assert not out.exists() and stdout == ""
    assert not list(tmp_path.glob(".trajectory.json.*"))
