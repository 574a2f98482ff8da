"""The prompt order in the state store (DESIGN §15): kept per agent across processes, refreshes and
backends, read back as stored, exported and imported; a store of schema version 1 is read as it
is and migrated by its first write."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

import memsolve
from memsolve.cache import PromptOrder
from memsolve.errors import StateError
from memsolve.rounds.state import SCHEMA_VERSION, AgentKey, StateStore
from memsolve.selector import Selector

from ..conftest import make_policy, rec

CACHED = "cache: {provider: anthropic-5m, input_price: 3, value_per_dollar: 1000, min_prefix: 0}\n"
KEY = AgentKey("test", "", "a")


def policy(cache: str = "") -> memsolve.Policy:
    return make_policy("budget: {tokens: 200}\nfidelity: [raw, summary]\ncontext: {now: 1}\n"
                       "solver: {engine: dp, cross_check: dp}\n" + cache)


def records(utilities: dict[str, float]) -> list[dict]:
    return [rec(rid, tokens=100, utility=u, text=f"the text of {rid}") for rid, u in utilities.items()]


def test_a_new_selector_over_the_same_state_continues_the_prompt_order(store_address) -> None:
    address = store_address()
    first = Selector(policy(CACHED), records({"a": 5.0, "b": 4.0, "c": 1.0}), state=address, agent="a")
    one = first.select()
    assert one.prompt_order == ("a", "b") and one.cache.previous is None
    first.store.close()
    # another process: a new Selector, records loaded again, utilities changed; alone, c would
    # replace a, but the stored order says a and b are the cached prefix (as in tests/test_cache.py)
    later = Selector(policy(CACHED), records({"a": 3.0, "b": 4.0, "c": 3.2}), state=address, agent="a")
    assert later.prompt_orders == {}
    two = later.select()
    assert two.round == 2 and two.prompt_order == ("a", "b")
    assert two.cache.previous == 2 and two.cache.prefix_records == 2 and two.cache.first_change is None
    stored = StateStore(address).load(KEY).prompt_order
    assert stored is not None and stored.ids == ("a", "b") and stored.levels == ("raw", "raw")
    assert list(stored.tokens) == [100, 100] and stored == later.prompt_orders[None]
    later.store.close()


def test_the_order_continues_without_a_cache_block_and_across_a_refresh(store_address) -> None:
    address = store_address()
    Selector(policy(), records({"b": 5.0, "a": 4.0, "c": 1.0}), state=address, agent="a").select()
    # round 2 in a new process: b is worth less, d is new (c, dropped in round 1, stays out)
    second = Selector(policy(), records({"b": 1.0, "a": 4.0, "c": 5.0, "d": 5.0}), state=address, agent="a")
    assert second.select().prompt_order == ("a", "d")
    # a refresh re-admits c, which replaces a; the order is kept (the provider's cache is not
    # emptied): d stays first, c is new
    third = Selector(policy(), records({"b": 1.0, "a": 4.0, "c": 5.0, "d": 5.0}), state=address, agent="a")
    assert third.select(refresh=True).prompt_order == ("d", "c")
    assert StateStore(address).load(KEY).prompt_order.ids == ("d", "c")
    # a reset forgets it with the rest of the key
    assert StateStore(address).reset(KEY) is True
    assert StateStore(address).load(KEY).prompt_order is None
    fresh = Selector(policy(), records({"d": 5.0, "c": 5.0}), state=address, agent="a").select()
    assert fresh.prompt_order == ("c", "d")
    for selector in (second, third):
        selector.store.close()


def test_the_stored_order_wins_over_a_callers_stale_one(store_address) -> None:
    """Two workers serve one agent: the round before is the other worker's, and the cache holds
    its prompt, not the one this worker remembers."""
    address = store_address()
    p = policy("cache: {provider: anthropic-5m, input_price: 3, value_per_dollar: 1, min_prefix: 0}\n")
    mine = Selector(p, records({"a": 5.0, "b": 4.0}), state=address, agent="a")
    assert mine.select().prompt_order == ("a", "b")
    other = Selector(p, records({"a": 1.0, "b": 4.0, "c": 5.0}), state=address, agent="a")
    assert other.select().prompt_order == ("b", "c")  # its round: b kept first, c new, a dropped
    # mine still remembers (a, b); the stored (b, c) is the previous prompt: b is its intact head,
    # and the first change is c (not among mine's records), not a (dropped by the other round)
    again = mine.select()
    assert again.prompt_order == ("b",) and again.cache.previous == 2 and again.cache.prefix_records == 1
    assert again.cache.first_change["id"] == "c"
    for selector in (mine, other):
        selector.store.close()


def test_the_command_line_continues_the_order_across_processes(tmp_path: Path, cli) -> None:
    policy_file = tmp_path / "p.yaml"
    policy_file.write_text("apiVersion: memsolve/v1\nkind: MemoryPolicy\nmetadata: {name: cli}\n"
                           "budget: {tokens: 200}\ncontext: {now: 1}\n" + CACHED)
    first, later = tmp_path / "r1.json", tmp_path / "r2.json"
    first.write_text(json.dumps(records({"a": 5.0, "b": 4.0, "c": 1.0})))
    later.write_text(json.dumps(records({"a": 3.0, "b": 4.0, "c": 3.2})))
    state = tmp_path / "s.db"
    outputs = []
    for path in (first, later):
        run = cli("--policy", policy_file, "--records", path, "--state", state, "--agent", "a", "--format", "json")
        assert run.exit_code == 0, run.stderr
        outputs.append(json.loads(run.stdout))
    assert outputs[0]["prompt_order"] == ["a", "b"] and outputs[0]["cache"]["previous"] is None
    assert outputs[1]["prompt_order"] == ["a", "b"]
    assert outputs[1]["cache"]["previous"] == 2 and outputs[1]["cache"]["prefix"]["records"] == 2


def _downgrade(address: str, backend: str) -> None:
    """The store as memsolve with schema version 1 left it: no prompt_orders table."""
    statements = ["DROP TABLE prompt_orders", "UPDATE memsolve_meta SET value='1' WHERE key='schema_version'"]
    if backend == "sqlite":
        conn = sqlite3.connect(address)
        for sql in statements:
            conn.execute(sql)
        conn.commit()
        conn.close()
    else:
        import psycopg

        with psycopg.connect(address) as conn:
            for sql in statements:
                conn.execute(sql)


def _version(address: str, backend: str) -> tuple[str, bool]:
    """The stored schema version and whether prompt_orders exists."""
    if backend == "sqlite":
        conn = sqlite3.connect(address)
        try:
            version = conn.execute("SELECT value FROM memsolve_meta WHERE key='schema_version'").fetchone()[0]
            table = conn.execute("SELECT 1 FROM sqlite_master WHERE name='prompt_orders'").fetchone() is not None
        finally:
            conn.close()
        return version, table
    import psycopg

    with psycopg.connect(address) as conn:
        version = conn.execute("SELECT value FROM memsolve_meta WHERE key='schema_version'").fetchone()[0]
        table = conn.execute("SELECT to_regclass('prompt_orders')").fetchone()[0] is not None
    return version, table


def test_a_version_1_store_is_read_as_it_is_and_migrated_by_its_first_write(store_address, backend: str) -> None:
    address = store_address()
    rs = memsolve.load_records(records({"a": 5.0, "b": 4.0, "c": 1.0}))
    StateStore(address).round(policy(), rs, agent="a")
    _downgrade(address, backend)
    assert _version(address, backend) == ("1", False)
    store = StateStore(address)  # one store: with PostgreSQL, one connection reads, then writes
    before = Path(address).read_bytes() if backend == "sqlite" else None
    state = store.load(KEY)  # a read: round, queue, ceilings as stored, no prompt order, nothing changed
    assert state.round == 2 and state.prompt_order is None
    assert store.export()["agents"][0]["round"] == 2
    assert _version(address, backend) == ("1", False)
    if backend == "sqlite":
        assert Path(address).read_bytes() == before
    result = store.round(policy(), rs, agent="a")  # the first write migrates, in its own transaction
    assert result.round == 2 and result.prompt_order == ("a", "b")
    assert _version(address, backend) == (str(SCHEMA_VERSION), True)
    assert store.load(KEY).prompt_order.ids == ("a", "b")
    store.close()


def test_export_leaves_the_prompt_order_out_and_an_import_starts_a_new_one(tmp_path: Path, cli) -> None:
    """memsolve/state/v1 (round, queue, ceilings, history) is unchanged: an imported key's next
    round has no previous prompt (the provider's cache is written once more), then continues."""
    source, target = tmp_path / "s.db", tmp_path / "t.db"
    Selector(policy(CACHED), records({"a": 5.0, "b": 4.0, "c": 1.0}), state=str(source), agent="a").select()
    assert StateStore(source).load(KEY).prompt_order is not None
    exported = tmp_path / "export.json"
    assert cli("state", "export", "--state", source, "--out", exported).exit_code == 0
    assert "prompt_order" not in json.loads(exported.read_text())["agents"][0]
    assert "prompt_order" not in json.loads(cli("state", "show", "--state", source, "--agent", "a",
                                                 "--format", "json").stdout)["agents"][0]
    assert cli("state", "import", exported, "--state", target).exit_code == 0
    assert StateStore(target).load(KEY).prompt_order is None
    turns = [Selector(policy(CACHED), records({"a": 5.0, "b": 4.0, "c": 1.0}), state=str(target), agent="a").select()
             for _ in range(2)]
    assert [t.round for t in turns] == [2, 3]
    assert turns[0].cache.previous is None and turns[1].cache.prefix_records == 2


def test_an_empty_selection_is_stored_as_an_empty_order(store_address) -> None:
    address = store_address()
    store = StateStore(address)
    nothing = make_policy("budget: {tokens: 0}\ncontext: {now: 1}\n")
    result = store.round(nothing, memsolve.load_records(records({"a": 5.0})), agent="a")
    assert result.prompt_order == ()
    stored = store.load(KEY).prompt_order
    assert stored is not None and len(stored) == 0 and stored == PromptOrder([], [], [], [])
    store.close()


def test_a_prompt_order_state_read_with_a_damaged_version_still_refuses(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    StateStore(path).round(policy(), memsolve.load_records(records({"a": 5.0})), agent="a")
    conn = sqlite3.connect(path)
    conn.execute("UPDATE memsolve_meta SET value='0' WHERE key='schema_version'")
    conn.commit()
    conn.close()
    with pytest.raises(StateError, match="state schema version missing or invalid"):
        StateStore(path).load(KEY)
