"""The ``memsolve`` process (memsolve.cli.run): it leaves without tearing its heap down, and still
writes all it wrote, keeps every exit status, and runs the exit handlers."""

from __future__ import annotations

import os
import subprocess
import sys

from ..conftest import ROOT

CH15 = ("--policy", "policies/ch15.yaml", "--records", "examples/ch15/base.json")


def _process(*args: str, code: str | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-c", code, *args] if code else [sys.executable, "-m", "memsolve", *args]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # streams to a pipe buffer
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)


def test_the_process_writes_what_main_writes_and_keeps_the_status(cli) -> None:
    for args, status in ((CH15 + ("--format", "json", "--trace", "full"), 0), (("--policy", "nowhere.yaml"), 2),
                         (("--version",), 0), (("--no-such-option",), 2)):
        in_process = cli(*args)
        process = _process(*args)
        assert (process.returncode, in_process.exit_code) == (status, status)
        assert process.stdout == in_process.stdout
        assert process.stderr.strip() == in_process.stderr.strip()


def test_a_large_output_to_a_pipe_is_written_whole() -> None:
    # the streams are flushed before the process leaves: nothing buffered is lost
    process = _process(*CH15, "--format", "json", code=(
        "from memsolve.cli import run; run()"))
    assert process.returncode == 0 and process.stdout.endswith("}\n") and '"trace"' in process.stdout


def test_exit_handlers_run_once_and_a_live_thread_takes_the_ordinary_exit() -> None:
    handler = "import atexit, sys; from memsolve.cli import run; atexit.register(print, 'handler ran'); "
    process = _process("--version", code=handler + "run()")
    assert process.returncode == 0 and process.stdout.count("handler ran") == 1
    # a thread still running: the interpreter exits as it always did (joins it, then the handlers)
    thread = "import threading, time; threading.Thread(target=time.sleep, args=(0.3,)).start(); "
    process = _process("--policy", "nowhere.yaml", code=handler + thread + "run()")
    assert process.returncode == 2 and process.stdout.count("handler ran") == 1
    assert "file not found" in process.stderr


def test_a_message_as_exit_status_is_printed_with_status_1() -> None:
    process = _process(code="import sys, memsolve.cli as c; c.main = lambda: sys.exit('stopped: why'); c.run()")
    assert process.returncode == 1 and process.stderr.strip() == "stopped: why"
