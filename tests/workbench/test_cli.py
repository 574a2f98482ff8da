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


def test_the_policy_from_standard_input_is_read_once_and_served(tmp_path) -> None:
    import re

    import httpx

    text = (ROOT / POLICY).read_text(encoding="utf-8")
    source = tmp_path / "policy.yaml"
    source.write_text(text, encoding="utf-8")
    with source.open("rb") as stdin:
        proc = subprocess.Popen([sys.executable, "-m", "memsolve", "workbench", "--policy", "-", "--records",
                                 "examples/incidents/records.json", "--port", "0"],
                                cwd=ROOT, stdin=stdin, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline() if proc.stderr else ""
        match = re.search(r"http://127\.0\.0\.1:\d+/", line)
        assert match, line + (proc.stderr.read() if proc.poll() is not None and proc.stderr else "")
        start = httpx.get(match.group(0) + "api/start", timeout=30).json()
        assert start["policy_file"] == "<stdin>" and start["yaml"] == start["original"] == text
        assert "needs a query" in start["error"]["message"]
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        if proc.stderr:
            proc.stderr.close()


def test_a_bad_policy_on_standard_input_and_records_from_it_are_one_line(tmp_path) -> None:
    bad = "apiVersion: memsolve/v1\nkind: MemoryPolicy\nmetadata: {name: x}\nbudget: {tokens: -1}\n"
    proc = subprocess.run([sys.executable, "-m", "memsolve", "workbench", "--policy", "-", "--records",
                           "examples/incidents/records.json", "--port", "0"],
                          cwd=ROOT, input=bad, capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == "error: <stdin>:4:18: budget.tokens: expected a number >= 0, got `-1`\n"
    proc = workbench("--policy", POLICY, "--records", "-", "--port", "0")
    assert proc.returncode == 2 and proc.stderr.startswith("error: --records - is standard input")
    assert proc.stderr.count("\n") == 1


def test_a_wildcard_host_warns_and_names_the_hosts_it_accepts() -> None:
    import socket

    proc = subprocess.Popen([sys.executable, "-m", "memsolve", "workbench", "--policy", POLICY, "--host", "0.0.0.0",
                             "--port", "0", "--allow-host", "wb.example"],
                            cwd=ROOT, stderr=subprocess.PIPE, text=True)
    try:
        warning = proc.stderr.readline() if proc.stderr else ""
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        if proc.stderr:
            proc.stderr.close()
    assert warning.startswith("warning: listening on 0.0.0.0: anyone who can reach this machine can use the page")
    accepted = warning.partition("accepts: ")[2].partition(";")[0].split(", ")
    assert {"wb.example", "localhost", "127.0.0.1", socket.gethostname().lower()} <= set(accepted)
