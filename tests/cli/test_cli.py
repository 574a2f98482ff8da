"""The command line: golden runs on the examples, exit codes, one-line errors, safe output files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from memsolve.schemas import validator

from ..conftest import ROOT, write

CH15 = ("--policy", "policies/ch15.yaml", "--records")


def test_default_command_is_solve_and_prints_a_table(cli) -> None:
    result = cli(*CH15, "examples/ch15/base.json")
    assert result.exit_code == 0
    out = result.stdout
    for text in ("review-v2", "summary", "old-review", "version-authority",
                 "authority bound to v1, current is v2", "6 / 6 tokens", "cp-sat: optimal",
                 "cross-check dp agrees", "action 1 -> 1: preserved"):
        assert text in out


def test_json_output_golden_fields(cli) -> None:
    result = cli(*CH15, "examples/ch15/changed.json", "--format", "json")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert list(validator("result").iter_errors(data)) == []
    assert data["selected"] == [{"id": "summary", "level": "raw", "tokens": 2, "utility": 3.0}]
    assert data["dropped"] == [{"id": "review-v2", "reason": "no level fits the budget of 2 tokens"}]
    assert data["excluded"] == [{"id": "old-review", "rule": "version-authority",
                                 "reason": "authority bound to v1, current is v2"}]
    assert (data["objective"], data["tokens_used"], data["budget"]) == (3.0, 2, {"tokens": 2, "max_records": None})
    assert data["compression"]["preserved"] is False


def test_solve_subcommand_and_flags(cli) -> None:
    result = cli("solve", *CH15, "examples/ch15/base.json", "--format", "json", "--budget", "6",
                 "--now", "10", "--current-version", "v2", "--engine", "dp")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["solver"]["engine"] == "dp"


def test_conflicting_flag_is_exit_2_one_line(cli) -> None:
    result = cli(*CH15, "examples/ch15/base.json", "--budget", "5")
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("error: examples/ch15/base.json:2:13: budget: conflicting budget")


def test_team_policies_run_from_their_records_field(cli) -> None:
    for name in ("team-a", "team-b"):
        result = cli("--policy", f"policies/{name}.yaml", "--format", "json")
        assert result.exit_code == 0
        assert json.loads(result.stdout)["solver"]["status"] == "optimal"


def test_frontier_json_and_plot(cli, tmp_path: Path) -> None:
    result = cli("frontier", *CH15, "examples/ch15/base.json", "--format", "json")
    assert json.loads(result.stdout) == {"frontier": [
        {"budget": 0, "objective": 0.0}, {"budget": 2, "objective": 3.0},
        {"budget": 4, "objective": 8.0}, {"budget": 6, "objective": 11.0}]}
    plot = tmp_path / "f.svg"
    assert cli("frontier", *CH15, "examples/ch15/base.json", "--plot", plot).exit_code == 0
    first = plot.read_bytes()
    assert first.startswith(b"<?xml")
    again = cli("frontier", *CH15, "examples/ch15/base.json", "--plot", plot)
    assert again.exit_code == 2 and "--force" in again.stderr
    assert cli("frontier", *CH15, "examples/ch15/base.json", "--plot", plot, "--force").exit_code == 0
    assert plot.read_bytes() == first  # deterministic SVG


def test_validate(cli, tmp_path: Path) -> None:
    ok = cli("validate", *sorted(str(p) for p in (ROOT / "policies").glob("*.yaml")))
    assert ok.exit_code == 0 and ok.stdout.count("ok: ") == len(list((ROOT / "policies").glob("*.yaml")))
    bad = write(tmp_path, "bad.yaml", "apiVersion: memsolve/v1\nkind: MemoryPolicy\nmetadata: {name: x}\n"
                                      "rules:\n  - freshnes: {}\n")
    result = cli("validate", "policies/ch15.yaml", bad)
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: {bad}:5:5: rules[0].freshnes: unknown rule type `freshnes`; did you mean `freshness`?\n"
    )


def test_bad_records_exit_2(cli, tmp_path: Path) -> None:
    bad = write(tmp_path, "r.json", {"records": [{"id": "a", "timestamp": 1, "tokens": -3, "utility": 1}],
                                     "now": 2, "budget": 3})
    result = cli(*CH15, bad)
    assert result.exit_code == 2
    assert result.stderr == f"error: {bad}:6:17: records[0].tokens: expected a number >= 0, got `-3`\n"


def test_missing_records_source(cli, tmp_path: Path) -> None:
    result = cli("--policy", "policies/ch15.yaml")
    assert result.exit_code == 2 and "no records" in result.stderr


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


def test_usage_error_is_exit_2(cli) -> None:
    assert cli("--policy").exit_code == 2
    assert cli("--policy", "p.yaml", "--engine", "magic").exit_code == 2


def test_strict_passes_when_proven(cli) -> None:
    assert cli(*CH15, "examples/ch15/base.json", "--strict").exit_code == 0


def test_timings_go_to_stderr(cli) -> None:
    result = cli(*CH15, "examples/ch15/base.json", "--format", "json", "--timings")
    assert "timings:" in result.stderr and json.loads(result.stdout)


def test_real_process_error_has_no_traceback(tmp_path: Path) -> None:
    bad = write(tmp_path, "p.yaml", "apiVersion: memsolve/v1\nkind: MemoryPolicy\nmetadata: {name: x}\nbudget: 3\n")
    proc = subprocess.run([sys.executable, "-m", "memsolve", "--policy", str(bad), "--records",
                           "examples/ch15/base.json"], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2
    assert proc.stderr == f"error: {bad}:4:9: budget: expected a mapping, got `3`\n"
    assert proc.stdout == ""


def test_version_says_which_kernel_runs(cli, monkeypatch) -> None:
    assert "(compiled kernel)" in cli("--version").output
    monkeypatch.setenv("MEMSOLVE_KERNEL", "numpy")
    assert "(numpy kernel: MEMSOLVE_KERNEL=numpy)" in cli("--version").output
