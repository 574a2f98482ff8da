"""Reading input files: hostile input (aliases, deep nesting, huge files, numbers and strings)
is refused fast with one located error."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import memsolve
from memsolve import records, source

from .conftest import write

HEAD = "apiVersion: memsolve/v1\nkind: MemoryPolicy\nmetadata: {name: x}\n"


def _billion_laughs(head: str) -> str:
    lines = [head.rstrip("\n"), 'a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 10)]
    return "\n".join(lines) + "\n"


def test_billion_laughs_policy_fails_fast(cli, tmp_path: Path) -> None:
    path = write(tmp_path, "p.yaml", _billion_laughs(HEAD))
    start = time.perf_counter()
    result = cli("validate", path)
    assert result.exit_code == 2 and "aliases" in result.stderr
    assert time.perf_counter() - start < 2.0


def test_billion_laughs_records_fail_fast(tmp_path: Path) -> None:
    path = write(tmp_path, "r.yaml", "records: &r [{id: a, timestamp: 0, tokens: 1, utility: 1}]\nagain: *r\n")
    with pytest.raises(memsolve.InputError, match="aliases"):
        memsolve.load_records(path)


@pytest.mark.parametrize("name, text", [
    ("deep.json", "[" * 5000 + "]" * 5000),
    ("deep.yaml", "records: " + "[" * 5000 + "]" * 5000 + "\n"),
    ("deep2.yaml", "records:\n" + "".join("  " * i + "- \n" for i in range(100))),
])
def test_deep_nesting_is_refused(tmp_path: Path, name: str, text: str) -> None:
    with pytest.raises(memsolve.InputError, match="nest"):
        memsolve.load_records(write(tmp_path, name, text))


def test_numbers_beyond_the_solver_range(tmp_path: Path, cli) -> None:
    path = write(tmp_path, "r.json", '[{"id": "a", "timestamp": 0, "tokens": 1, "utility": 1' + "0" * 400 + "}]")
    bad = memsolve.load_records(path).invalid[0].error
    assert bad.path == "[0].utility" and "2**63" in bad.message
    huge = write(tmp_path, "b.json", {"records": [], "budget": 10**15, "now": 0})
    result = cli("--policy", "policies/ch15.yaml", "--records", huge)
    assert result.exit_code == 2 and "budget" in result.stderr
    assert cli("--policy", "policies/ch15.yaml", "--records", huge, "--budget", str(10**13)).exit_code == 2


def test_size_count_and_string_limits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, "r.json", [{"id": f"r{i}", "timestamp": 0, "tokens": 1, "utility": 1} for i in range(5)])
    monkeypatch.setattr(source, "MAX_FILE_BYTES", 10)
    with pytest.raises(memsolve.InputError, match="more than the limit"):
        memsolve.load_records(path)
    monkeypatch.setattr(source, "MAX_FILE_BYTES", 10**6)
    monkeypatch.setattr(records, "MAX_RECORDS", 4)
    with pytest.raises(memsolve.InputError, match="5 records, more than the limit of 4"):
        memsolve.load_records(path)
    monkeypatch.setattr(source, "MAX_STRING", 3)
    with pytest.raises(memsolve.InputError, match="string of"):
        memsolve.load_records(write(tmp_path, "s.yaml", "- {id: abcdef, timestamp: 0, tokens: 1, utility: 1}\n"))


def test_control_characters_in_yaml_are_one_line_errors(tmp_path: Path, cli) -> None:
    # found by atheris: libyaml's reader error spans two lines
    path = tmp_path / "p.yaml"
    path.write_bytes(HEAD.encode() + b"\n\x00\x00\x00\x00\x00")
    result = cli("validate", path)
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert result.stderr == f"error: {path}:5:1: invalid YAML: character '\\x00' is not allowed\n"
