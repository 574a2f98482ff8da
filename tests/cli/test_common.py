"""What every command shares: output files written atomically and never overwritten silently,
one-line errors from a real process, a clean exit on SIGTERM."""

from __future__ import annotations

import errno
import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

import memsolve
from memsolve import output
from memsolve.solver.engines import engine_named

from ..conftest import ROOT, needs, write

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


# --- usage errors: one line, like every other error -------------------------------------

TEAM_A = ("--policy", "policies/team-a.yaml")
ROUNDS = ("--rounds-file", "examples/rounds/conversation.jsonl")
USAGE_ERRORS = {
    "budget-negative": ([*TEAM_A, "--budget", "-1"], "'--budget'"),
    "budget-text": ([*TEAM_A, "--budget", "lots"], "'--budget'"),
    "max-records-negative": ([*TEAM_A, "--max-records", "-5"], "'--max-records'"),
    "format-xml": ([*TEAM_A, "--format", "xml"], "'--format'"),
    "state-format-xml": (["state", "show", "--state", "s.db", "--agent", "a", "--format", "xml"], "'--format'"),
    "engine": ([*TEAM_A, "--engine", "magic"], "'--engine'"),
    "unknown-option": ([*TEAM_A, "--bugdet", "3"], "'--bugdet'"),
    "unknown-option-first": (["--colour"], "'--colour'"),
    "unknown-command": (["solv"], "'solv'"),
    "unknown-state-command": (["state", "shwo"], "'shwo'"),
    "missing-option": (["simulate", *ROUNDS], "'--policy'"),
    "missing-value": (["--policy"], "'--policy'"),
    "extra-argument": ([*TEAM_A, "stray"], "stray"),
    "missing-argument": (["diff", "policies/team-a.yaml"], "NEW_POLICY"),
    "policy-dir": (["--policy", "{dir}"], "'--policy'"),
    "records-dir": ([*TEAM_A, "--records", "{dir}"], "'--records'"),
    "out-dir": ([*TEAM_A, "--out", "{dir}"], "'--out'"),
    "state-dir": ([*TEAM_A, "--state", "{dir}", "--agent", "a"], "'--state'"),
    "baseline-dir": (["audit", *TEAM_A, "--baseline", "{dir}"], "'--baseline'"),
    "write-baseline-dir": (["audit", *TEAM_A, "--write-baseline", "{dir}"], "'--write-baseline'"),
    "plot-dir": (["frontier", *TEAM_A, "--plot", "{dir}"], "'--plot'"),
    "simulate-plot-dir": (["simulate", "--policy", "policies/conversation.yaml", *ROUNDS, "--plot", "{dir}"],
                          "'--plot'"),
    "rounds-file-dir": (["simulate", "--policy", "policies/conversation.yaml", "--rounds-file", "{dir}"],
                        "'--rounds-file'"),
    "state-show-dir": (["state", "show", "--state", "{dir}", "--agent", "a"], "'--state'"),
    "state-export-out-dir": (["state", "export", "--state", "s.db", "--out", "{dir}"], "'--out'"),
    "check-out-dir": (["check", "policies/team-a.yaml", "--out", "{dir}"], "'--out'"),
}


@pytest.mark.parametrize("name", list(USAGE_ERRORS))
def test_usage_errors_are_one_line_exit_2(cli, tmp_path: Path, name: str) -> None:
    args, names = USAGE_ERRORS[name]
    result = cli(*[str(tmp_path) if a == "{dir}" else a for a in args])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
    assert "Usage:" not in result.stderr and "--help" not in result.stderr
    assert names in result.stderr


def test_usage_error_from_a_real_process_is_one_line() -> None:
    proc = subprocess.run([sys.executable, "-m", "memsolve", *TEAM_A, "--budget", "-1"], capture_output=True,
                          text=True, cwd=ROOT)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == "error: Invalid value for '--budget': -1 is not in the range 0<=x<=1000000000000.\n"


@pytest.mark.parametrize("args", [["--help"], ["-h"], ["solve", "--help"], ["state", "--help"],
                                  ["state", "export", "--help"], ["simulate", "-h"], [*TEAM_A, "--help"]])
def test_help_still_works(cli, args: list[str]) -> None:
    result = cli(*args)
    assert result.exit_code == 0 and result.stdout.startswith("Usage: ") and "Options:" in result.stdout


@pytest.mark.parametrize("args", [[], ["state"]])
def test_a_group_alone_prints_its_help(cli, args: list[str]) -> None:
    result = cli(*args)
    assert "Usage: " in result.output and "Commands:" in result.output


# --- --out where it cannot or must not be written --------------------------------------

RESULT = (*CH15, "examples/ch15/base.json", "--format", "json")


def _one_line(result, *parts: str) -> None:
    assert result.exit_code == 2, result.output
    assert result.stdout == "" and result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
    for part in parts:
        assert part in result.stderr, result.stderr


@pytest.mark.parametrize("force", [[], ["--force"]])
def test_out_at_a_dangling_symlink_is_refused(cli, tmp_path: Path, force: list[str]) -> None:
    link = tmp_path / "result.json"
    link.symlink_to(tmp_path / "planted" / "elsewhere.json")
    _one_line(cli(*RESULT, "--out", link, *force), str(link), "symbolic link")
    assert link.is_symlink() and os.readlink(link) == str(tmp_path / "planted" / "elsewhere.json")


def test_out_at_a_symlink_to_a_file_is_refused_with_force(cli, tmp_path: Path) -> None:
    real = write(tmp_path, "real.json", "keep")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    _one_line(cli(*RESULT, "--out", link, "--force"), str(link), "symbolic link")
    assert link.is_symlink() and real.read_text() == "keep"


def test_out_that_cannot_be_written_is_one_line(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def denied(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(output, "make_temporary", denied)
    out = tmp_path / "ro" / "result.json"
    out.parent.mkdir()
    _one_line(cli(*RESULT, "--out", out), f"error: {out}: cannot write: Permission denied")
    assert list(out.parent.iterdir()) == []


def _memsolve(*args: object, user: list[str] | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run([*(user or []), sys.executable, "-m", "memsolve", *map(str, args)], capture_output=True,
                          text=True, cwd=ROOT, env=env)


@needs(Path("/sys/kernel").is_dir(), "Linux sysfs")
def test_out_that_even_root_cannot_write_real_process() -> None:
    # sysfs takes no new files from anyone: a real write failure even where the tests run as root
    proc = _memsolve(*RESULT, "--out", "/sys/memsolve-result.json")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("error: /sys/memsolve-result.json: cannot write: ") and proc.stderr.count("\n") == 1


@pytest.mark.parametrize("mask", [0o022, 0o077], ids=["022", "077"])
def test_out_gets_the_usual_mode(tmp_path: Path, mask: int) -> None:
    out = tmp_path / "result.json"
    proc = subprocess.run(["sh", "-c", f'umask {mask:03o} && exec "$0" -m memsolve "$@"', sys.executable, *RESULT,
                           "--out", str(out)], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~mask


# --- an output never lands on an input or another output, even with --force ------------

def _state(cli, tmp_path: Path) -> Path:
    db = tmp_path / "s.db"
    assert cli(*TEAM_A, "--state", db, "--agent", "a").exit_code == 0
    return db


def test_out_over_the_state_file_is_refused(cli, tmp_path: Path) -> None:
    db = _state(cli, tmp_path)
    before = db.read_bytes()
    (tmp_path / "alias.db").symlink_to(db)
    os.link(db, tmp_path / "hard.db")
    for out in (db, tmp_path / "alias.db", tmp_path / "hard.db", f"{tmp_path}/./s.db"):
        _one_line(cli(*TEAM_A, "--state", db, "--agent", "a", "--out", out, "--force"),
                  "--out and --state name the same file")
        _one_line(cli("state", "export", "--state", db, "--out", out, "--force"),
                  "--out and --state name the same file")
    assert db.read_bytes() == before  # and no round ran
    assert json.loads(cli("state", "export", "--state", db).stdout)["agents"][0]["round"] == 2


def test_outputs_never_land_on_inputs_or_each_other(cli, tmp_path: Path) -> None:
    policy = write(tmp_path, "p.yaml", (ROOT / "policies/ch15.yaml").read_text())
    records = write(tmp_path, "r.json", (ROOT / "examples/ch15/base.json").read_text())
    kept = {p: p.read_bytes() for p in (policy, records)}
    inputs = ("--policy", policy, "--records", records)
    _one_line(cli(*inputs, "--out", policy, "--force"), "--out and --policy")
    _one_line(cli(*inputs, "--out", records, "--force"), "--out and --records")
    _one_line(cli("frontier", *inputs, "--plot", records, "--force"), "--plot and --records")
    _one_line(cli("audit", *inputs, "--write-baseline", tmp_path / "b.json", "--out", tmp_path / "b.json"),
              "--out and --write-baseline")
    _one_line(cli("check", policy, "--out", policy, "--force"), "--out and a policy")
    plot = tmp_path / "t.svg"
    _one_line(cli("simulate", "--policy", "policies/conversation.yaml", *ROUNDS, "--out", plot, "--plot", plot),
              "--out and --plot")
    assert {p: p.read_bytes() for p in kept} == kept
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.yaml", "r.json"]


def test_now_with_non_ascii_digits_is_no_number() -> None:
    from memsolve.cli.common import parse_now

    assert parse_now("2026") == 2026 and parse_now("-3") == -3 and parse_now("1.5") == 1.5
    assert parse_now("٢٠٢٦") == "٢٠٢٦" and parse_now("１２") == "１２"  # kept as text: refused as a time later


@pytest.mark.parametrize("flags", [["--current-version", "="], ["--current-version", "a=1", "--current-version", "a=2"],
                                   ["--now", "1" * 5000]])
def test_bad_context_flags_are_one_line_exit_2(cli, flags: list[str]) -> None:
    for command in ([], ["audit", "--baseline", "audits/team-a.json"]):
        result = cli(*command, "--policy", "policies/team-a.yaml", *flags)
        assert result.exit_code == 2 and result.stderr.startswith("error: ") and result.stderr.count("\n") == 1


def test_a_termination_turned_into_another_error_still_exits_143(capsys: pytest.CaptureFixture[str]) -> None:
    """SIGTERM arriving while an extension module initialises: pybind11 raises ImportError from
    it; the command still ends as terminated (143, one line), not with a traceback."""
    from memsolve.cli import common

    @common.guarded
    def importing() -> None:
        try:
            common._on_sigterm(15, None)
        except BaseException as exc:
            raise ImportError("initialization failed") from exc

    with pytest.raises(SystemExit) as exited:
        importing()
    assert exited.value.code == 143
    assert capsys.readouterr().err == "error: terminated; nothing was written\n"


def test_an_ordinary_error_is_not_taken_for_a_termination() -> None:
    from memsolve.cli import common

    @common.guarded
    def broken() -> None:
        raise ImportError("no such module")

    with pytest.raises(ImportError):
        broken()


def test_long_names_in_errors_are_cut(tmp_path: Path, cli) -> None:
    # an unknown field or option name is the offending value: cut to 40 characters (DESIGN §9)
    name = "Z" * 100_000
    write(tmp_path, "ok.yaml", "apiVersion: memsolve/v1\nkind: MemoryPolicy\nmetadata: {name: p}\n"
                               "budget: {tokens: 10}\nrules: []\n")
    policy_test = write(tmp_path, "t.yaml", "apiVersion: memsolve/v1\nkind: PolicyTest\nmetadata: {name: t}\n"
                                            f"policy: ok.yaml\nrecords: []\n{name}: 1\n")
    rounds = write(tmp_path, "r.jsonl", json.dumps({"records": [], name: 1}) + "\n")
    counter = write(tmp_path, "c.yaml", "apiVersion: memsolve/v1\nkind: MemoryPolicy\nmetadata: {name: p}\n"
                                        f"budget: {{tokens: 10}}\ntokens: {{counter: 'words{name}'}}\nrules: []\n")
    for args in (("test", policy_test), ("simulate", "--policy", tmp_path / "ok.yaml", "--rounds-file", rounds),
                 ("validate", counter)):
        result = cli(*args)
        assert result.exit_code == 2 and len(result.stderr) < 400 and "Z" * 41 not in result.stderr, args
    with pytest.raises(memsolve.InputError, match=r"unknown engine `Z{37}\.\.\.`"):
        engine_named(name)


@pytest.mark.parametrize(("given", "expected"), [({}, "1"), ({"OPENBLAS_NUM_THREADS": "3"}, "3"),
                                                 ({"OMP_NUM_THREADS": "4"}, "None")])
def test_the_cli_process_runs_one_blas_thread_unless_told(given: dict[str, str], expected: str) -> None:
    """cli.run sets OPENBLAS_NUM_THREADS=1 before numpy loads, where no thread count is set."""
    script = ("import atexit, os, sys\n"
              "atexit.register(lambda: print(os.environ.get('OPENBLAS_NUM_THREADS')))\n"
              "sys.argv = ['memsolve', '--version']\n"
              "from memsolve.cli import run\n"
              "run()\n")
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS",
                                                               "OMP_NUM_THREADS")}
    done = subprocess.run([sys.executable, "-c", script], env={**env, **given}, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == expected
