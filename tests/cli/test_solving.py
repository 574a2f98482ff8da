"""solve (the default command), validate and frontier on the command line: the examples, exit
codes, one-line errors, and fuzzed policies and records that give a result or one line."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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
    assert data["selected"] == [{"id": "summary", "level": "raw", "tokens": 2, "utility": 3.0, "text": None}]
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
    for name, session in (("team-a", ()), ("team-b", ("--session", "s-17"))):
        result = cli("--policy", f"policies/{name}.yaml", *session, "--format", "json")
        assert result.exit_code == 0
        assert json.loads(result.stdout)["solver"]["status"] == "optimal"
    # production-shaped: team-b's policy names no session, so a call without one is an input error
    missing = cli("--policy", "policies/team-b.yaml", "--format", "json")
    assert missing.exit_code == 2 and "no session is given" in missing.stderr


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


def test_usage_error_is_exit_2(cli) -> None:
    assert cli("--policy").exit_code == 2
    assert cli("--policy", "p.yaml", "--engine", "magic").exit_code == 2


def test_strict_passes_when_proven(cli) -> None:
    assert cli(*CH15, "examples/ch15/base.json", "--strict").exit_code == 0


def test_timings_go_to_stderr(cli) -> None:
    result = cli(*CH15, "examples/ch15/base.json", "--format", "json", "--timings")
    assert "timings:" in result.stderr and json.loads(result.stdout)


def test_version_says_which_kernel_runs(cli, monkeypatch) -> None:
    assert "(compiled kernel)" in cli("--version").output
    monkeypatch.setenv("MEMSOLVE_KERNEL", "numpy")
    assert "(numpy kernel: MEMSOLVE_KERNEL=numpy)" in cli("--version").output


def test_state_flags_go_together(cli) -> None:
    result = cli("--policy", "policies/team-a.yaml", "--state", "x.db")
    assert result.exit_code == 2 and "--state and --agent go together" in result.stderr
    assert cli("--policy", "policies/team-a.yaml", "--dry-run").exit_code == 2


# --- structured fuzzing through the CLI --------------------------------------------------

POLICY_TEXT = (ROOT / "policies/team-a.yaml").read_text().replace(
    "records: ../examples/shared.json", f"records: {ROOT / 'examples/shared.json'}")
RECORDS_TEXT = (ROOT / "examples/ch15/base.json").read_text()


def _mutate(text: str, data) -> str:
    edits = data.draw(st.lists(st.tuples(st.sampled_from(["delete", "insert", "replace", "duplicate-line"]),
                                         st.integers(0, max(len(text) - 1, 0)),
                                         st.sampled_from(list("{}[]:,-\"'&*!#\n\t 0123456789eE.nN") +
                                                         ["null", "true", "-1", "1e999", "NaN", "\udcff", "é"])),
                               min_size=1, max_size=4))
    for kind, at, piece in edits:
        if kind == "delete":
            text = text[:at] + text[at + 1:]
        elif kind == "insert":
            text = text[:at] + piece + text[at:]
        elif kind == "replace":
            text = text[:at] + piece + text[at + 1:]
        else:
            lines = text.splitlines(keepends=True)
            if lines:
                i = at % len(lines)
                text = "".join(lines[: i + 1] + [lines[i]] + lines[i + 1:])
    return text


def _assert_clean(result) -> None:
    assert result.exit_code in (0, 1, 2, 3), result.exception
    if result.exit_code != 0:
        assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
    assert "Traceback" not in result.stderr


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_fuzzed_policies_give_a_result_or_one_line(cli, tmp_path: Path, data) -> None:
    path = tmp_path / "p.yaml"
    path.write_bytes(_mutate(POLICY_TEXT, data).encode("utf-8", "surrogateescape"))
    _assert_clean(cli("--policy", path, "--format", "json", "--budget", "700"))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_fuzzed_records_give_a_result_or_one_line(cli, tmp_path: Path, data) -> None:
    path = tmp_path / "r.json"
    out = tmp_path / "out.json"
    out.unlink(missing_ok=True)
    path.write_bytes(_mutate(RECORDS_TEXT, data).encode("utf-8", "surrogateescape"))
    result = cli("--policy", "policies/ch15.yaml", "--records", path, "--format", "json", "--out", out)
    _assert_clean(result)
    if result.exit_code == 0:
        json.loads(out.read_text())  # complete, never partial
    else:
        assert not out.exists()


def test_regression_tab_after_a_key_character(cli, tmp_path: Path) -> None:
    # found by the fuzzer: libyaml accepts this text, the pure-Python composer used to locate
    # errors did not, and the error became a traceback
    text = POLICY_TEXT[:251] + "\t" + POLICY_TEXT[251:]
    _assert_clean(cli("--policy", write(tmp_path, "p.yaml", text), "--format", "json", "--budget", "700"))


def test_a_table_prints_ids_and_reasons_as_written_not_as_markup(cli, tmp_path: Path) -> None:
    # found in review: `[/x]` in a record id raised rich's MarkupError; `[bold]a` printed as `a`
    records = write(tmp_path, "r.jsonl", '{"id": "[/x]", "tokens": 3, "utility": 5, "timestamp": 0}\n'
                                         '{"id": "[bold]a", "tokens": 3, "utility": 4, "timestamp": 0}\n'
                                         '{"id": "[red]c[/red]", "tokens": 9, "utility": 1, "timestamp": 0}\n')
    policy = write(tmp_path, "p.yaml", "apiVersion: memsolve/v1\nkind: MemoryPolicy\nmetadata: {name: m}\n"
                                       "budget: {tokens: 6}\n")
    result = cli("--policy", str(policy), "--records", str(records), "--now", "1")
    assert result.exit_code == 0, result.output
    for text in ("[/x]", "[bold]a", "[red]c[/red]"):
        assert text in result.stdout


def test_a_large_json_result_is_written_in_pieces_byte_for_byte(cli, tmp_path: Path) -> None:
    # 3,000 records: a full trace of more pieces than one echo takes, printed and written to --out
    policy = write(tmp_path, "p.yaml", "apiVersion: memsolve/v1\nkind: MemoryPolicy\nmetadata: {name: big}\n"
                                       "budget: {tokens: 500}\nrules:\n  - max_age: 100\n")
    records = write(tmp_path, "r.json", [{"id": f"m{i}", "timestamp": i % 300, "tokens": 1 + i % 7,
                                          "utility": (i % 13) / 4, "text": f"é {i}"} for i in range(3000)])
    out = tmp_path / "out.json"
    printed = cli("--policy", policy, "--records", records, "--now", "300", "--format", "json")
    written = cli("--policy", policy, "--records", records, "--now", "300", "--format", "json", "--out", out)
    assert printed.exit_code == written.exit_code == 0
    assert printed.stdout_bytes == out.read_bytes()
    result = json.loads(out.read_text(encoding="utf-8"))
    assert len(result["trace"]) == 3000 and result["excluded"] and result["selected"]
