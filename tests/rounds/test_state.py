"""Rounds: the MemPrice queue, fidelity ceilings, the SQLite store under concurrency and crashes."""

from __future__ import annotations

import json
import math
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import memsolve
from memsolve.errors import StateError
from memsolve.rounds.state import SCHEMA_VERSION, AgentKey, StateStore

from ..conftest import ROOT, make_policy, rec


def policy(c: float = 1.0, alpha: float = 0.8, q0: float = 0.0, budget: int = 10) -> memsolve.Policy:
    return make_policy(f"budget: {{tokens: {budget}}}\npricing: {{c: {c}, alpha: {alpha}, q0: {q0}}}\n"
                       "context: {now: 0}\n")


def levels(raw: int, u: float) -> dict:
    return {"raw": {"tokens": raw, "utility": u}, "summary": {"tokens": max(raw // 4, 1), "utility": u * 0.6},
            "keywords": {"tokens": 1, "utility": u * 0.1}}


def test_queue_and_price_follow_the_formulas_over_many_rounds(store_address) -> None:
    store = StateStore(store_address())
    p = policy(c=2.0, alpha=0.8, q0=0.0, budget=10)
    records = memsolve.load_records([rec("big", tokens=10, utility=1000.0)])
    q = 0.0
    for t in range(1, 13):
        result = store.round(p, records, agent="a")
        assert result.round == t
        assert result.price.queue_before == pytest.approx(q)
        assert result.price.lam == pytest.approx(2.0 * q / math.sqrt(t))
        assert result.tokens_used == 10
        q = max(0.0, q + 10 / 10 - 0.8)
        assert result.price.queue_after == pytest.approx(q)
    state = store.load(AgentKey("test", "", "a"))
    assert state.round == 13 and state.queue == pytest.approx(q)
    assert [h.round for h in state.history] == list(range(1, 13))


def test_queue_never_goes_below_zero(store_address) -> None:
    store = StateStore(store_address())
    records = memsolve.load_records([rec("small", tokens=1, utility=1.0)])
    for _ in range(3):
        result = store.round(policy(q0=0.5, budget=10), records, agent="a")
    assert result.price.queue_before == 0.0 and result.price.queue_after == 0.0


def test_high_price_forces_deletion_and_deleted_records_stay_out(store_address) -> None:
    store = StateStore(store_address())
    p = policy(c=500.0, q0=1.0, budget=10)  # λ/B = 50 per token in round 1
    records = memsolve.load_records([{"id": "m", "timestamp": 0, "representations": levels(8, 20.0)}])
    first = store.round(p, records, agent="a")
    assert [d.id for d in first.dropped] == ["m"]
    cheap = policy(c=0.0, budget=10)  # a different policy name would be another key; same name here
    again = store.round(cheap, records, agent="a")
    assert [(e.id, e.rule) for e in again.excluded] == [("m", "fidelity-ceiling")]
    assert "deleted in round 1" in again.excluded[0].reason


def test_refresh_clears_ceilings_but_never_resets_the_queue(store_address) -> None:
    store = StateStore(store_address())
    p = policy(c=1.0, q0=0.0, budget=10)
    records = memsolve.load_records([{"id": "m", "timestamp": 0, "representations": levels(10, 5.0)},
                                     {"id": "n", "timestamp": 0, "representations": levels(8, 4.0)}])
    r1 = store.round(p, records, agent="a")
    r2 = store.round(p, records, agent="a")
    refreshed = store.round(p, records, agent="a", refresh=True)
    assert refreshed.round == 3  # t is untouched
    assert refreshed.price.queue_before == pytest.approx(r2.price.queue_after)  # so is Q
    assert refreshed.extra["state"]["refresh"] is True
    assert all(r.rule != "fidelity-ceiling" for entry in refreshed.trace for r in entry.rules if not r.passed)
    assert r1.round == 1


def test_dry_run_writes_nothing(store_address, backend: str) -> None:
    address = store_address()
    records = memsolve.load_records([rec("x")])
    StateStore(address).round(policy(), records, agent="a", dry_run=True)
    if backend == "sqlite":
        assert not Path(address).exists()
    else:
        assert _tables(address) == []
    StateStore(address).round(policy(), records, agent="a")
    before = StateStore(address).export(), Path(address).read_bytes() if backend == "sqlite" else None
    result = StateStore(address).round(policy(), records, agent="a", dry_run=True)
    assert result.round == 2
    assert (StateStore(address).export(), Path(address).read_bytes() if backend == "sqlite" else None) == before


def _tables(address: str) -> list[str]:
    import psycopg

    with psycopg.connect(address) as conn:
        return [r[0] for r in conn.execute("SELECT table_name FROM information_schema.tables "
                                           "WHERE table_schema = current_schema() ORDER BY 1")]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 40), st.lists(st.floats(0.5, 20), min_size=4, max_size=4)),
                min_size=2, max_size=6),
       st.floats(0, 50))
def test_fidelity_never_rises_across_rounds(store_address, rounds, c) -> None:
    store = StateStore(store_address())
    order = {"raw": 0, "summary": 1, "keywords": 2, "delete": 3}
    last: dict[str, int] = {}
    for budget, utilities in rounds:
        # the caller's utilities change every round; the ceilings must still hold
        records = memsolve.load_records(
            [{"id": f"r{i}", "timestamp": 0, "representations": levels(8 + 4 * i, u)} for i, u in enumerate(utilities)]
        )
        p_round = policy(c=c, q0=0.3, budget=max(budget, 1))
        result = store.round(p_round, records, agent="a")
        for entry in result.trace:
            if entry.outcome == "excluded":
                assert last.get(entry.id) == order["delete"]
                continue
            level = order[entry.allocation.level]
            assert level >= last.get(entry.id, 0)
            last[entry.id] = level


def test_state_keys_separate_policies_tenants_and_agents(store_address) -> None:
    store = StateStore(store_address())
    records = memsolve.load_records([rec("x", tenant="t1")])
    store.round(policy(), records, agent="a")
    store.round(policy(), records, agent="b")
    store.round(make_policy("budget: {tokens: 10}\ncontext: {now: 0}\ntenant: t1\n", name="other"), records, agent="a")
    assert {(k.policy, k.tenant, k.agent) for k in store.keys()} == {
        ("test", "", "a"), ("test", "", "b"), ("other", "t1", "a")}
    assert store.reset(AgentKey("test", "", "b")) is True
    assert len(store.keys()) == 2


@pytest.mark.parametrize("content", [b"this is not a database\n" * 10, b""])
def test_foreign_files_are_refused_and_left_untouched(tmp_path: Path, cli, content: bytes) -> None:
    path = tmp_path / "s.db"
    path.write_bytes(content)
    other = sqlite3.connect(tmp_path / "other.db")
    other.execute("CREATE TABLE t (x)")
    other.commit()
    other.close()
    for target in (path, tmp_path / "other.db"):
        before = target.read_bytes()
        result = cli("--policy", "policies/ch15.yaml", "--records", "examples/ch15/base.json",
                     "--state", target, "--agent", "a")
        if target == path and content == b"":
            assert result.exit_code == 0  # an empty file is a new store
            continue
        assert result.exit_code == 2, result.stderr
        assert "not a memsolve state file" in result.stderr and result.stderr.count("\n") == 1
        assert target.read_bytes() == before


def test_newer_schema_version_is_refused(store_address, backend: str, cli) -> None:
    address = store_address()
    StateStore(address).round(policy(), memsolve.load_records([rec("x")]), agent="a")
    _execute(address, backend, f"UPDATE memsolve_meta SET value='{SCHEMA_VERSION + 1}' WHERE key='schema_version'")
    before = Path(address).read_bytes() if backend == "sqlite" else _dump(address)
    result = cli("--policy", "policies/ch15.yaml", "--records", "examples/ch15/base.json", "--state", address,
                 "--agent", "a")
    assert result.exit_code == 2 and "newer than this memsolve supports" in result.stderr
    assert result.stderr.count("\n") == 1
    assert (Path(address).read_bytes() if backend == "sqlite" else _dump(address)) == before


def _execute(address: str, backend: str, sql: str) -> None:
    if backend == "sqlite":
        conn = sqlite3.connect(address)
        conn.execute(sql)
        conn.commit()
        conn.close()
    else:
        import psycopg

        with psycopg.connect(address) as conn:
            conn.execute(sql)


def _dump(address: str) -> dict[str, list]:
    """Every row of every memsolve table (PostgreSQL), for before/after comparisons."""
    import psycopg

    with psycopg.connect(address) as conn:
        return {t: conn.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall()
                for t in ("agents", "ceilings", "history", "memsolve_meta") if t in _tables(address)}


def _round_cmd(address: str, agent: str = "a") -> list[str]:
    return [sys.executable, "-m", "memsolve", "--policy", "policies/team-a.yaml", "--state", address,
            "--agent", agent, "--format", "json"]


def test_concurrent_rounds_never_lose_an_update(store_address) -> None:
    address = store_address()
    procs = [subprocess.Popen(_round_cmd(address, agent), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for agent in ["a"] * 6 + ["b"] * 2]
    outputs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0] * 8, [o[1] for o in outputs]
    rounds_a = sorted(json.loads(o[0])["round"] for o, p in zip(outputs, range(8), strict=True) if p < 6)
    assert rounds_a == [1, 2, 3, 4, 5, 6]  # every round saw the state the previous one wrote
    store = StateStore(address)
    state = store.load(AgentKey("team-a", "team-a", "a"))
    assert state.round == 7 and [h.round for h in state.history] == [1, 2, 3, 4, 5, 6]
    queue = 0.5
    for h in state.history:  # the queue chain is unbroken
        assert h.queue_before == pytest.approx(queue)
        queue = h.queue_after
    assert store.load(AgentKey("team-a", "team-a", "b")).round == 3


CRASH_LOOP = """
import sys, memsolve
from memsolve.rounds.state import StateStore
p = memsolve.load_policy("policies/team-a.yaml")
r = memsolve.load_records(p.records)
s = StateStore(sys.argv[1])
while True:
    s.round(p, r, agent="crash")
"""


def _consistent(db: Path) -> int:
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    state = StateStore(db).load(AgentKey("team-a", "team-a", "crash"))
    rounds = [h.round for h in state.history]
    assert rounds == list(range(1, state.round))  # old or new round, never a mix
    if state.history:
        assert state.queue == pytest.approx(state.history[-1].queue_after)
    return state.round - 1


def test_kill_9_mid_round_leaves_the_previous_state_intact(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    done, kills = 0, 0
    for delay in (0.9, 1.3, 1.1, 1.7, 1.2, 1.5):
        proc = subprocess.Popen([sys.executable, "-c", CRASH_LOOP, str(db)], cwd=ROOT)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        kills += 1
        now = _consistent(db) if db.exists() else 0
        assert now >= done
        done = now
    assert kills == 6
    # and the store still works
    result = StateStore(db).round(memsolve.load_policy(ROOT / "policies/team-a.yaml"),
                                  memsolve.load_records(ROOT / "examples/shared.json"), agent="crash")
    assert result.round == done + 1


def test_a_file_whose_first_round_never_committed_reads_as_empty(tmp_path: Path) -> None:
    # found by fuzz/state_faults.py: a process killed before its first commit leaves an empty file
    path = tmp_path / "s.db"
    path.write_bytes(b"")
    store = StateStore(path)
    assert store.keys() == [] and store.export()["agents"] == []
    assert store.round(policy(), memsolve.load_records([rec("x")]), agent="a").round == 1


def test_stateful_results_match_the_result_schema(store_address) -> None:
    from memsolve.schemas import validator

    store = StateStore(store_address())
    policy_ = memsolve.load_policy(ROOT / "policies/team-a.yaml")
    records = memsolve.load_records(ROOT / "examples/shared.json")
    for refresh in (False, False, True):
        data = json.loads(store.round(policy_, records, agent="a", refresh=refresh).to_json())
        assert list(validator("result").iter_errors(data)) == []
        assert data["state"]["refresh"] is refresh


# --- damaged files: a StateError saying so, the file as it was, no lock or journal left ----

SECRET = "tenant-b-secret-salary-figures"


def _stored(tmp_path: Path) -> Path:
    path = tmp_path / "s.db"
    records = memsolve.load_records([{"id": f"m{i}", "timestamp": 0, "representations": levels(8, 5.0 + i)}
                                     for i in range(3)])
    for _ in range(2):
        StateStore(path).round(policy(c=1.0, budget=10), records, agent="a")
    return path


def _edit(path: Path, sql: str) -> bytes:
    conn = sqlite3.connect(path)
    conn.execute(sql)
    conn.commit()
    conn.close()
    return path.read_bytes()


def _not_locked(path: Path) -> None:
    """Nothing of the failed call holds the file: no open descriptor, no lock, no journal."""
    if Path("/proc/self/fd").is_dir():
        held = [fd for fd in Path("/proc/self/fd").iterdir() if str(fd.resolve()).startswith(str(path))]
        assert held == []
    conn = sqlite3.connect(path, timeout=0)
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("ROLLBACK")
    conn.close()
    assert not Path(f"{path}-journal").exists()


@pytest.mark.parametrize(("sql", "reason"), [
    ("UPDATE agents SET queue = 'lots'", "an agent's round or queue is not a number"),
    ("UPDATE agents SET round = 0", "an agent's round or queue is not a number"),
    ("UPDATE agents SET round = x'0102'", "an agent's round or queue is not a number"),
    ("UPDATE agents SET queue = 9e999", "an agent's round or queue is not a number"),
    ("UPDATE ceilings SET level = x'07'", "a fidelity ceiling is damaged"),
    ("UPDATE ceilings SET round = 'one'", "a fidelity ceiling is damaged"),
    (f"UPDATE history SET levels = '{{\"{SECRET}\": ' WHERE round = 2", "a history row is damaged"),
    (f"UPDATE history SET levels = '{{\"{SECRET}\": \"x\"}}'", "a history row is damaged"),
    ("UPDATE history SET levels = '[1, 2]'", "a history row is damaged"),
    ("UPDATE history SET objective = 'much'", "a history row is damaged"),
    ("UPDATE history SET result_sha256 = x'00'", "a history row is damaged"),
    (f"UPDATE history SET levels = CAST(x'7b22ff' || CAST('{SECRET}' AS BLOB) AS TEXT)",
     "a stored text is not valid UTF-8"),
    ("UPDATE agents SET agent = x'ff' WHERE agent = 'a'", "an agent's key is not text"),
    ("UPDATE prompt_orders SET records = '[[\"m0\", \"raw\", 8]]'", "a prompt order is damaged"),
    ("UPDATE prompt_orders SET records = '[[\"m0\", \"raw\", \"8\", \"\"]]'", "a prompt order is damaged"),
    ("UPDATE prompt_orders SET records = '[[\"m0\"'", "a prompt order is damaged"),
    ("UPDATE prompt_orders SET records = x'5b5d'", "a prompt order is damaged"),
    # found in review: a token count past 64 bits (OverflowError) and nesting past the parser (RecursionError)
    (f"UPDATE prompt_orders SET records = '[[\"m0\", \"raw\", {10**30}, \"\"]]'", "a prompt order is damaged"),
    ("UPDATE prompt_orders SET records = '[[\"m0\", \"raw\", -5, \"\"]]'", "a prompt order is damaged"),
    (f"UPDATE prompt_orders SET records = '{'[' * 100000}{']' * 100000}'", "a prompt order is damaged"),
], ids=["queue-text", "round-zero", "round-blob", "queue-infinite", "ceiling-level-blob", "ceiling-round-text",
        "levels-cut", "levels-text-values", "levels-list", "objective-text", "sha-blob", "levels-not-utf8",
        "key-blob", "order-short", "order-tokens-text", "order-cut", "order-blob", "order-tokens-huge",
        "order-tokens-negative", "order-deep"])
def test_damaged_values_are_refused_without_quoting_them(tmp_path: Path, sql: str, reason: str) -> None:
    path = _stored(tmp_path)
    before = _edit(path, sql)
    store = StateStore(path)
    calls = {
        "round": lambda: store.round(policy(c=1.0, budget=10), memsolve.load_records([rec("x")]), agent="a"),
        "load": lambda: store.load(AgentKey("test", "", "a")),
        "export": lambda: store.export(),
    }
    for name, call in calls.items():
        if "agent = x'ff'" in sql and name != "export":
            continue  # the damaged key is not the one asked for: round and load never read it
        with pytest.raises(StateError) as caught:
            call()
        assert str(caught.value) == f"{path}: state file is corrupt ({reason}); left untouched", name
        assert SECRET not in str(caught.value)
        assert path.read_bytes() == before
        _not_locked(path)


@pytest.mark.parametrize("value", ["'abc'", "x'00'", "''"])
def test_a_damaged_schema_version_is_refused(tmp_path: Path, value: str) -> None:
    path = _stored(tmp_path)
    before = _edit(path, f"UPDATE memsolve_meta SET value = {value} WHERE key = 'schema_version'")
    with pytest.raises(StateError, match="state schema version missing or invalid"):
        StateStore(path).keys()
    assert path.read_bytes() == before


def test_a_schema_name_that_is_not_utf8_is_corrupt(tmp_path: Path) -> None:
    # found by fuzzing: SQLite's own message quoted the damaged name and Python could not decode it
    path = _stored(tmp_path)
    data = path.read_bytes()
    name = b"sqlite_autoindex_memsolve_meta_1"
    at = data.index(name, 100)
    damaged = data[:at + len(name) - 1] + b"\xaa" + data[at + len(name):]
    path.write_bytes(damaged)
    for call in (lambda s: s.keys(), lambda s: s.round(policy(), memsolve.load_records([rec("x")]), agent="a")):
        with pytest.raises(StateError, match=r"state file is corrupt \(malformed database schema\); left untouched"):
            call(StateStore(path))
        assert path.read_bytes() == damaged
        _not_locked(path)


def test_a_corrupt_page_found_mid_round_rolls_back_and_releases_the_file(tmp_path: Path) -> None:
    path = _stored(tmp_path)
    conn = sqlite3.connect(path)
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'history'").fetchone()[0]
    conn.close()
    data = bytearray(path.read_bytes())
    data[(root - 1) * page_size:(root - 1) * page_size + 32] = b"\xa5" * 32
    path.write_bytes(bytes(data))
    store = StateStore(path)
    for _ in range(3):  # the same store keeps answering, and never blocks on a lock of its own
        with pytest.raises(StateError, match="state file is corrupt"):
            store.round(policy(c=1.0, budget=10), memsolve.load_records([rec("x")]), agent="a")
        assert path.read_bytes() == bytes(data)
        _not_locked(path)


def test_a_write_that_fails_rolls_back_the_whole_round(tmp_path: Path) -> None:
    path = _stored(tmp_path)
    # a trigger makes the last statement of the round fail, after the agent row was updated
    before = _edit(path, "CREATE TRIGGER boom BEFORE INSERT ON history BEGIN SELECT RAISE(FAIL, 'disk gone'); END")
    store = StateStore(path)
    with pytest.raises(StateError, match="disk gone"):
        store.round(policy(c=1.0, budget=10), memsolve.load_records([rec("x")]), agent="a")
    assert path.read_bytes() == before
    state = store.load(AgentKey("test", "", "a"))
    assert state.round == 3 and [h.round for h in state.history] == [1, 2]
    _not_locked(path)
