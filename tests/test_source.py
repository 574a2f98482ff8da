"""Reading input files: hostile input (aliases, deep nesting, huge files, numbers and strings)
is refused fast with one located error."""

from __future__ import annotations

import json
import os
import threading
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


# --- files that are not regular files -----------------------------------------------------


def _within(seconds: float, call):
    """Run ``call`` in a thread; a regression that blocks fails the test instead of hanging the suite."""
    out: dict[str, object] = {}

    def run() -> None:
        try:
            out["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            out["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still blocked after {seconds} s"
    if "error" in out:
        raise out["error"]  # type: ignore[misc]
    return out.get("value")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_refused_at_once(tmp_path: Path, cli) -> None:
    fifo = tmp_path / "r.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(memsolve.InputError, match=r"not a regular file \(a named pipe\)"):
        _within(5, lambda: memsolve.load_records(fifo))
    result = cli("--policy", "policies/team-a.yaml", "--records", fifo)  # CliRunner wants the main thread
    assert result.exit_code == 2 and result.stderr == f"error: {fifo}: not a regular file (a named pipe)\n"
    link = tmp_path / "p.yaml"
    link.symlink_to(fifo)
    with pytest.raises(memsolve.InputError, match="named pipe"):
        _within(5, lambda: memsolve.load_policy(link))


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom", "/dev/null"])
def test_devices_are_refused_even_behind_a_symlink(tmp_path: Path, device: str) -> None:
    if not os.path.exists(device):
        pytest.skip(f"no {device}")
    with pytest.raises(memsolve.InputError, match=r"not a regular file \(a character device\)"):
        _within(5, lambda: source.read_text(device))
    link = tmp_path / "r.json"
    link.symlink_to(device)
    with pytest.raises(memsolve.InputError, match="not a regular file") as caught:
        _within(5, lambda: memsolve.load_records(link))
    assert caught.value.file == str(link)


def test_a_folder_and_a_dangling_link(tmp_path: Path) -> None:
    folder = tmp_path / "r.json"
    folder.mkdir()
    with pytest.raises(memsolve.InputError, match="is a directory"):
        memsolve.load_records(folder)
    dangling = tmp_path / "d.json"
    dangling.symlink_to(tmp_path / "missing.json")
    with pytest.raises(memsolve.InputError, match="file not found"):
        memsolve.load_records(dangling)


def test_a_file_larger_than_its_size_said_is_cut_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a file that grows between fstat and read: fstat says 10 bytes, the file has 5,000
    path = write(tmp_path, "r.json", json.dumps([{"id": f"r{i}", "timestamp": 0, "tokens": 1} for i in range(200)]))
    real = os.fstat

    def small(fd: int) -> os.stat_result:
        info = list(real(fd))
        info[6] = 10  # st_size
        return os.stat_result(info)

    monkeypatch.setattr(os, "fstat", small)
    monkeypatch.setattr(source, "MAX_FILE_BYTES", 1000)
    with pytest.raises(memsolve.InputError, match="grew past the limit of 1,000 bytes"):
        memsolve.load_records(path)
    monkeypatch.setattr(source, "MAX_FILE_BYTES", 10**6)
    assert len(memsolve.load_records(path).valid) == 200  # read whole although fstat said 10


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="no /proc")
def test_files_reporting_size_zero_are_still_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    text, _ = source.read_text("/proc/self/status")  # a regular file of size 0 with content
    assert "Name:" in text
    monkeypatch.setattr(source, "MAX_FILE_BYTES", 20)
    with pytest.raises(memsolve.InputError, match="grew past the limit of 20 bytes"):
        source.read_text("/proc/self/status")
