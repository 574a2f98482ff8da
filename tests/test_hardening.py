"""Hostile input, isolation as a property, clean interruption."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import memsolve
from memsolve import records, source
from memsolve.ci.audit import invariants
from memsolve.rounds.state import StateStore

from .conftest import ROOT, make_policy, write

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


# --- structured fuzzing through the CLI --------------------------------------------------

POLICY_TEXT = (ROOT / "policies/team-a.yaml").read_text().replace(
    "records: ../examples/shared.jsonl", f"records: {ROOT / 'examples/shared.jsonl'}")
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


# --- isolation as a property -----------------------------------------------------------

TENANTS = ["a", "b"]


@st.composite
def multi_tenant(draw):
    n = draw(st.integers(1, 12))
    items = []
    for i in range(n):
        item = {"id": f"r{i}", "timestamp": draw(st.integers(0, 20)), "tokens": draw(st.integers(0, 8)),
                "utility": draw(st.floats(0, 10))}
        if draw(st.booleans()):
            item["tenant"] = draw(st.sampled_from(TENANTS))
        if draw(st.booleans()):
            item["key"] = draw(st.sampled_from(["k1", "k2"]))
        if draw(st.booleans()):
            item["ttl"] = draw(st.integers(0, 15))
        if draw(st.booleans()):
            item["authority"] = True
            item["version"] = draw(st.sampled_from(["v1", "v2"]))
            if draw(st.booleans()):
                item["document"] = draw(st.sampled_from(["d1", "d2"]))
        items.append(item)
    return items


@settings(max_examples=150, deadline=None)
@given(multi_tenant(), st.sampled_from(TENANTS), st.integers(0, 30), st.sampled_from(["cp-sat", "dp", "greedy"]),
       st.sampled_from([None, 2]))
def test_isolation_invariants_hold_for_every_engine(items, tenant, budget, engine, max_records) -> None:
    limit = "" if max_records is None else f", max_records: {max_records}"
    policy = make_policy(
        f"tenant: {tenant}\nbudget: {{tokens: {budget}{limit}}}\ncontext: {{now: 20}}\n",
        rules="- freshness: {default_ttl: 10}\n- version_authority: {current_versions: {d1: v2}, current_version: v1}\n"
              "- latest_key: {}\n",
    )
    recs = memsolve.load_records(items)
    result = memsolve.solve(policy, recs, engine=engine)
    broken = [f for f in invariants(policy, recs, None, result) if not f.passed]
    assert broken == []
    _no_superseded(items, result)


def _no_superseded(items, result) -> None:
    newest: dict[tuple, tuple] = {}
    for pos, item in enumerate(items):
        if "key" in item:
            group = (item.get("tenant"), item["key"])
            newest[group] = max(newest.get(group, (-1, -1)), (item["timestamp"], pos))
    for s in result.selected:
        pos = int(s.id[1:])
        item = items[pos]
        if "key" in item:
            assert newest[(item.get("tenant"), item["key"])] == (item["timestamp"], pos)


@settings(max_examples=40, deadline=None)
@given(st.lists(multi_tenant(), min_size=1, max_size=4), st.sampled_from(TENANTS))
def test_isolation_invariants_hold_through_rounds(tmp_path_factory, batches, tenant) -> None:
    store = StateStore(tmp_path_factory.mktemp("iso") / "s.db")
    head = f"tenant: {tenant}\nbudget: {{tokens: 12}}\ncontext: {{now: 20}}\npricing: {{c: 5, q0: 0.5}}\n"
    policy = make_policy(head,
                         rules="- freshness: {default_ttl: 10}\n- version_authority: {current_version: v1}\n"
                               "- latest_key: {}\n")
    for items in batches:
        recs = memsolve.load_records(items)
        result = store.round(policy, recs, agent="iso")
        assert all(f.passed for f in invariants(policy, recs, None, result))
        _no_superseded(items, result)


# --- interruption ----------------------------------------------------------------------


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


def test_regression_tab_after_a_key_character(cli, tmp_path: Path) -> None:
    # found by the fuzzer: libyaml accepts this text, the pure-Python composer used to locate
    # errors did not, and the error became a traceback
    text = POLICY_TEXT[:251] + "\t" + POLICY_TEXT[251:]
    _assert_clean(cli("--policy", write(tmp_path, "p.yaml", text), "--format", "json", "--budget", "700"))


@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "tests/data/fuzz").iterdir()))
def test_fuzz_found_inputs_are_input_errors(name: str) -> None:
    # inputs fuzz/fuzz_loaders.py found crashing (null or numeric YAML keys reached difflib)
    path = ROOT / "tests/data/fuzz" / name
    with pytest.raises(memsolve.InputError):
        memsolve.load_policy(path) if name.endswith(".yaml") else memsolve.load_records(path)


def test_control_characters_in_yaml_are_one_line_errors(tmp_path: Path, cli) -> None:
    # found by atheris: libyaml's reader error spans two lines
    path = tmp_path / "p.yaml"
    path.write_bytes(HEAD.encode() + b"\n\x00\x00\x00\x00\x00")
    result = cli("validate", path)
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert result.stderr == f"error: {path}:5:1: invalid YAML: character '\\x00' is not allowed\n"
