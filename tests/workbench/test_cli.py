"""``memsolve workbench`` on bad input: one line, exit 2, before anything listens."""

from __future__ import annotations

import socket
import subprocess
import sys

from ..conftest import ROOT
from .conftest import POLICY, extra

pytestmark = extra


def workbench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memsolve", "workbench", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)


def test_a_bad_policy_or_labelled_set_is_one_line_and_exit_2(tmp_path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: memsolve/v1\nkind: MemoryPolicy\nmetadata: {name: x}\nbudget: {tokens: -1}\n")
    proc = workbench("--policy", str(bad), "--records", "examples/incidents/records.json", "--port", "0")
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == f"error: {bad}:4:18: budget.tokens: expected a number >= 0, got `-1`\n"
    proc = workbench("--policy", POLICY, "--labelled", str(tmp_path / "missing.yaml"), "--port", "0")
    assert proc.returncode == 2 and proc.stderr.startswith("error: ") and proc.stderr.count("\n") == 1


def test_a_taken_port_is_one_line_and_exit_2() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        proc = workbench("--policy", POLICY, "--port", str(port))
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"error: cannot listen on 127.0.0.1:{port}: ") and proc.stderr.count("\n") == 1


def test_a_bad_port_is_a_usage_line() -> None:
    proc = workbench("--policy", POLICY, "--port", "70000")
    assert proc.returncode == 2 and proc.stderr.startswith("error: ") and proc.stderr.count("\n") == 1
