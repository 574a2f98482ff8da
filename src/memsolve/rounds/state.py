"""State across rounds: the MemPrice pressure queue, fidelity ceilings, and round history.

Two backends hold the same tables, keyed by (policy name, tenant, agent), behind one
:class:`StateStore`: an embedded SQLite file (standard library; a path) and a PostgreSQL database
(psycopg 3; a ``postgresql://`` address, :mod:`memsolve.rounds.postgres`) for many workers on many
machines. A round reads the state, solves, and writes the new state inside one transaction that
also holds the key's lock: a second round for the same key waits for the first and then solves on
the state the first wrote, so no update is lost; a crash at any point rolls back to the previous
round.

Per key: the next round t (from 1), the queue Q_t, each record's fidelity ceiling with the
round that set it, and one history row per round. ``refresh`` clears the ceilings (candidates
are rebuilt from the archive) and never touches Q or t. ``state export`` writes every key as
JSON and :meth:`StateStore.import_state` writes such a document into another store (SQLite to
PostgreSQL), checked field by field first.

SQLite: the transaction is ``BEGIN IMMEDIATE`` (the file's write lock), waited for up to
``timeout`` seconds. A damaged file (a corrupt page, a value of the wrong type, text that is
not UTF-8) is a :class:`StateError` saying so, raised wherever SQLite or the row checks find the
damage, inside the transaction: it rolls back, so the file is left byte-identical, and the
message never quotes a stored value. No ``PRAGMA quick_check`` on open: it reads the whole file
(every agent's pages, ~45 ms for 17 MB and growing with it) where a round reads one key's; damage
that no read reaches harms nothing.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import math
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import pipeline
from ..cache import PromptOrder, order_of
from ..context import Context, resolve_context
from ..errors import InputError, StateError
from ..policies.model import Policy
from ..policies.verdicts import Ceiling
from ..pricing import RoundPrice, price_for
from ..records import DELETE, RecordSet
from ..result import Result
from ..source import MAX_TOKENS

SCHEMA_VERSION = 2  # 2: prompt_orders (DESIGN §15)
APPLICATION_ID = 0x4D454D53  # "MEMS": marks the file as memsolve's

# DESIGN §15: each key's last prompt order, one row, the records as JSON [[id, level, tokens, sha256], ...]
PROMPT_ORDERS_SQL = """
CREATE TABLE prompt_orders (
    policy TEXT NOT NULL, tenant TEXT NOT NULL, agent TEXT NOT NULL, records TEXT NOT NULL,
    PRIMARY KEY (policy, tenant, agent)
);
"""
# what a store of an older schema version lacks: the first write that finds it adds it (a
# migration, in that write's transaction) and sets the version; a read leaves it as it is
MIGRATIONS: dict[int, str] = {1: PROMPT_ORDERS_SQL}

SCHEMA_SQL = """
CREATE TABLE memsolve_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE agents (
    policy TEXT NOT NULL, tenant TEXT NOT NULL, agent TEXT NOT NULL,
    round INTEGER NOT NULL, queue REAL NOT NULL,
    PRIMARY KEY (policy, tenant, agent)
);
CREATE TABLE ceilings (
    policy TEXT NOT NULL, tenant TEXT NOT NULL, agent TEXT NOT NULL,
    record TEXT NOT NULL, level TEXT NOT NULL, round INTEGER NOT NULL,
    PRIMARY KEY (policy, tenant, agent, record)
);
CREATE TABLE history (
    policy TEXT NOT NULL, tenant TEXT NOT NULL, agent TEXT NOT NULL, round INTEGER NOT NULL,
    queue_before REAL NOT NULL, queue_after REAL NOT NULL, lambda REAL NOT NULL,
    tokens_used INTEGER NOT NULL, budget INTEGER NOT NULL, objective REAL NOT NULL,
    refresh INTEGER NOT NULL, levels TEXT NOT NULL, result_sha256 TEXT NOT NULL,
    PRIMARY KEY (policy, tenant, agent, round)
);
""" + PROMPT_ORDERS_SQL


# what the first statements on a file can raise: SQLite parses the schema then, and a damaged
# schema's error message can quote bytes that are not UTF-8 (Python then fails to decode it)
_OPENING_FAILURES = (sqlite3.Error, UnicodeDecodeError)


@dataclass(frozen=True)
class AgentKey:
    policy: str
    tenant: str  # "" when the policy sets no tenant
    agent: str


@dataclass(frozen=True)
class RoundRow:
    """One round as the state's history and a simulation's trajectory both record it."""

    round: int
    queue_before: float
    queue_after: float
    lam: float
    tokens_used: int
    budget: int
    objective: float
    refresh: bool
    levels: Mapping[str, int]  # how many records were kept at each level (and deleted)
    result_sha256: str

    @classmethod
    def of(cls, result: Result, refresh: bool = False) -> RoundRow:
        """The row of a finished round."""
        levels: dict[str, int] = {}
        for chosen in result.selected:
            levels[chosen.level] = levels.get(chosen.level, 0) + 1
        if result.dropped:
            levels[DELETE] = len(result.dropped)
        p = result.price
        return cls(result.round, p.queue_before, p.queue_after, p.lam, result.tokens_used, result.budget,
                   result.objective, refresh, dict(sorted(levels.items())),
                   hashlib.sha256(result.to_json().encode()).hexdigest())

    @property
    def occupancy(self) -> float:
        return self.tokens_used / self.budget if self.budget else 0.0

    def to_dict(self) -> dict[str, Any]:
        """The history's form (``state show``, ``state export``)."""
        return {
            "round": self.round, "queue_before": self.queue_before, "queue_after": self.queue_after,
            "lambda": self.lam, "tokens_used": self.tokens_used, "budget": self.budget,
            "occupancy": self.occupancy, "objective": self.objective, "refresh": self.refresh,
            "levels": dict(self.levels), "result_sha256": self.result_sha256,
        }

    def trajectory_dict(self) -> dict[str, Any]:
        """The trajectory's form (``simulate``)."""
        return {"t": self.round, "queue": self.queue_before, "lambda": self.lam, "tokens_used": self.tokens_used,
                "budget": self.budget, "occupancy": self.occupancy, "objective": self.objective,
                "queue_after": self.queue_after, "levels": dict(sorted(self.levels.items()))}


@dataclass(frozen=True)
class AgentState:
    """What the store holds for one key: the next round, its queue, ceilings, history."""

    key: AgentKey
    round: int = 1
    queue: float | None = None  # None before the first round: the policy's q0 applies
    ceilings: Mapping[str, Ceiling] = field(default_factory=dict)
    history: tuple[RoundRow, ...] = ()
    prompt_order: PromptOrder | None = None  # the last round's (DESIGN §15); None: none stored

    def next_price(self, policy: Policy) -> RoundPrice:
        """The price the next round will pay (the policy's q0 before the first round)."""
        return price_for(policy, self.round, self.queue)

    def to_dict(self) -> dict[str, Any]:
        return {
            "policy": self.key.policy, "tenant": self.key.tenant or None, "agent": self.key.agent,
            "round": self.round, "queue": self.queue,
            "ceilings": {rid: {"level": c.level, "round": c.round} for rid, c in sorted(self.ceilings.items())},
            "history": [h.to_dict() for h in self.history],
        }  # the prompt order is not part of memsolve/state/v1: an imported key's next round starts a new one


class StateStore:
    """Where rounds keep their state: an embedded SQLite file (a path) or a PostgreSQL database
    (a ``postgresql://`` address). ``StateStore(address)`` returns the backend the address names
    (:class:`SQLiteStore` or :class:`memsolve.rounds.postgres.PostgresStore`); both hold the same
    tables and give the same answers. A backend supplies the transaction (with the lock that keeps
    one round per key at a time), the schema check and its error messages; reading, rounds,
    operators' tools and import are written once, here."""

    address: str
    # a row of round 0 is a first round's lock, not state (PostgreSQL's row lock mode)
    _placeholders = False

    def close(self) -> None:
        """Release what the store holds open (connections); it reopens them if used again."""

    def __enter__(self) -> StateStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __new__(cls, address: str | Path, *args: Any, **kwargs: Any) -> StateStore:
        if cls is StateStore:
            cls = _backend(address)
        return super().__new__(cls)

    # --- what a backend supplies -------------------------------------------------------

    @contextmanager
    def transaction(self, write: bool = True, lock: AgentKey | None = None) -> Iterator[Any]:
        """One transaction (rolled back on error), or None when nothing is stored and ``write``
        is false. With ``write``, ``lock`` names the key whose rounds it serialises."""
        raise NotImplementedError
        yield

    def _corrupt(self, reason: str) -> StateError:
        return StateError(f"{self.address}: state is corrupt ({reason}); left untouched")

    def _execute(self, conn: Any, sql: str, args: Sequence[Any] = ()) -> Any:
        """Run one statement written with ``?`` placeholders; the cursor."""
        raise NotImplementedError

    def _execute_many(self, conn: Any, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        raise NotImplementedError

    def _failure(self, exc: Exception) -> StateError | None:
        """The StateError for a database error raised while writing, None for any other error."""
        return None

    def _holds_prompt_orders(self, conn: Any) -> bool:
        """True when the store has the prompt_orders table (schema version 2 on; an older store
        read without a write has none)."""
        raise NotImplementedError

    # --- reading ----------------------------------------------------------------------

    def load(self, key: AgentKey, conn: Any = None) -> AgentState:
        """The state of one key (round 1, no ceilings, when nothing is stored)."""
        if conn is None:
            with self.transaction(write=False) as read:
                return self.load(key, read) if read is not None else AgentState(key)
        args = (key.policy, key.tenant, key.agent)
        row = self._execute(conn, "SELECT round, queue FROM agents WHERE policy=? AND tenant=? AND agent=?",
                            args).fetchone()
        if row is None or (self._placeholders and row[0] == 0):
            return AgentState(key)
        # a damaged cell can still decode, as a value of another type: check every one
        if not (_is_int(row[0]) and row[0] >= 1 and _is_number(row[1])):
            raise self._corrupt("an agent's round or queue is not a number")
        ceilings: dict[str, Ceiling] = {}
        for rid, level, rnd in self._execute(
            conn, "SELECT record, level, round FROM ceilings WHERE policy=? AND tenant=? AND agent=? ORDER BY record",
            args,
        ).fetchall():  # fetched whole: no statement is left half-stepped when a check fails
            if not (type(rid) is str and type(level) is str and _is_int(rnd)):
                raise self._corrupt("a fidelity ceiling is damaged")
            ceilings[rid] = Ceiling(level, rnd)
        history = tuple(
            self._history_row(r)
            for r in self._execute(
                conn,
                "SELECT round, queue_before, queue_after, lambda, tokens_used, budget, objective, refresh, "
                "levels, result_sha256 FROM history WHERE policy=? AND tenant=? AND agent=? ORDER BY round",
                args,
            ).fetchall()
        )
        return AgentState(key, row[0], row[1], ceilings, history, self._prompt_order(conn, args))

    def _prompt_order(self, conn: Any, args: Sequence[Any]) -> PromptOrder | None:
        if not self._holds_prompt_orders(conn):
            return None
        row = self._execute(conn, "SELECT records FROM prompt_orders WHERE policy=? AND tenant=? AND agent=?",
                            args).fetchone()
        if row is None:
            return None
        try:
            items = json.loads(row[0]) if type(row[0]) is str else None
        except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth
            items = None
        if not (isinstance(items, list) and all(
                isinstance(i, list) and len(i) == 4 and type(i[0]) is str and type(i[1]) is str and _is_int(i[2])
                and 0 <= i[2] <= MAX_TOKENS and type(i[3]) is str for i in items)):
            raise self._corrupt("a prompt order is damaged")
        return PromptOrder([i[0] for i in items], [i[1] for i in items], [i[2] for i in items],
                           [i[3] for i in items])

    def _history_row(self, r: tuple[Any, ...]) -> RoundRow:
        try:
            levels = json.loads(r[8]) if type(r[8]) is str else None
        except ValueError:
            levels = None
        if not (
            all(_is_int(r[i]) for i in (0, 4, 5, 7)) and all(_is_number(r[i]) for i in (1, 2, 3, 6))
            and isinstance(levels, dict) and all(type(k) is str and _is_int(v) for k, v in levels.items())
            and type(r[9]) is str
        ):
            raise self._corrupt("a history row is damaged")
        return RoundRow(r[0], r[1], r[2], r[3], r[4], r[5], r[6], bool(r[7]), levels, r[9])

    def keys(self, agent: str | None = None, *, policy: str | None = None, tenant: str | None = None) -> list[AgentKey]:
        """The stored keys, optionally only one agent's, one policy's (by name), one tenant's."""
        _one_tenant(tenant)
        with self.transaction(write=False) as conn:
            return [] if conn is None else self._keys(conn, agent, policy, tenant)

    def _keys(self, conn: Any, agent: str | None, policy: str | None, tenant: str | None) -> list[AgentKey]:
        where = [(column, value) for column, value in (("policy", policy), ("tenant", tenant), ("agent", agent))
                 if value is not None]
        sql = "SELECT policy, tenant, agent FROM agents"
        if where:
            sql += " WHERE " + " AND ".join(f"{column}=?" for column, _ in where)
        rows = self._execute(conn, sql, [value for _, value in where]).fetchall()
        if not all(type(v) is str for r in rows for v in r):
            raise self._corrupt("an agent's key is not text")
        # sorted here, not by the database: PostgreSQL orders text by its collation, SQLite by bytes
        return [AgentKey(*r) for r in sorted(rows)]

    # --- rounds -----------------------------------------------------------------------

    def key_for(self, policy: Policy, records: RecordSet, context: Context | None, agent: str) -> AgentKey:
        tenant = resolve_context(policy, records, context).tenant
        return AgentKey(policy.name, tenant or "", agent)

    def round(
        self,
        policy: Policy,
        records: RecordSet,
        context: Context | None = None,
        *,
        agent: str,
        refresh: bool = False,
        dry_run: bool = False,
        engine: str | None = None,
        timings: pipeline.Timings | None = None,
        trace: str = "full",
        previous: Any = None,
    ) -> Result:
        """Run one round for ``agent``: read state, solve, write the new state atomically.
        ``previous``: the previous turn's prompt order as the caller holds it (a
        memsolve.cache.PromptOrder, DESIGN §15); the one stored for the key is the previous turn
        when there is one (another process may have run the agent's last round), the caller's
        when it is the same (it holds the records: nothing to compare by text). A refresh keeps
        it: the provider's cache is not emptied."""
        key = self.key_for(policy, records, context, agent)
        with self.transaction(write=not dry_run, lock=None if dry_run else key) as conn:
            state = self.load(key, conn) if conn is not None else AgentState(key)
            ceilings = {} if refresh else dict(state.ceilings)
            stored = state.prompt_order
            if stored is not None and not (previous is not None and previous == stored):
                previous = stored
            result = pipeline.run(
                policy, records, context, engine=engine,
                round_price=state.next_price(policy),
                ceilings=ceilings,
                extra={"state": {"agent": agent, "round": state.round, "refresh": refresh, "dry_run": dry_run}},
                timings=timings,
                trace=trace,
                previous=previous,
            ).result
            if not dry_run and conn is not None:
                self._write(conn, key, state, result, ceilings, refresh)
        return result

    def _write(
        self, conn: Any, key: AgentKey, state: AgentState, result: Result, ceilings: Mapping[str, Ceiling],
        refresh: bool,
    ) -> None:
        t = state.round
        new = dict(ceilings)
        for chosen in result.selected:
            new[chosen.id] = Ceiling(chosen.level, t) if _changed(new.get(chosen.id), chosen.level) else new[chosen.id]
        for dropped in result.dropped:
            new[dropped.id] = Ceiling(DELETE, t)
        self._store(conn, AgentState(key, t + 1, result.price.queue_after, new, (RoundRow.of(result, refresh),),
                                     order_of(result)), replace=True)

    def _store(self, conn: Any, state: AgentState, *, replace: bool) -> None:
        """Write ``state``: its round and queue, all its ceilings (replacing the stored ones) and its
        history rows (added to the stored ones; ``replace`` false: the key must be new)."""
        args = (state.key.policy, state.key.tenant, state.key.agent)
        try:
            if replace:
                self._execute(conn, "INSERT INTO agents VALUES (?, ?, ?, ?, ?) ON CONFLICT (policy, tenant, agent) "
                              "DO UPDATE SET round=excluded.round, queue=excluded.queue",
                              (*args, state.round, state.queue))
                self._execute(conn, "DELETE FROM ceilings WHERE policy=? AND tenant=? AND agent=?", args)
            else:
                self._execute(conn, "INSERT INTO agents VALUES (?, ?, ?, ?, ?)", (*args, state.round, state.queue))
            self._execute_many(conn, "INSERT INTO ceilings VALUES (?, ?, ?, ?, ?, ?)",
                               [(*args, rid, c.level, c.round) for rid, c in sorted(state.ceilings.items())])
            self._execute_many(
                conn, "INSERT INTO history VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(*args, h.round, h.queue_before, h.queue_after, h.lam, h.tokens_used, h.budget, h.objective,
                  int(h.refresh), json.dumps(dict(h.levels), sort_keys=True), h.result_sha256)
                 for h in state.history],
            )
            if state.prompt_order is not None:
                order = state.prompt_order
                records = json.dumps([list(item) for item in zip(order.ids, order.levels, order.tokens.tolist(),
                                                                 order.digests, strict=True)],
                                     ensure_ascii=False, separators=(",", ":"))
                self._execute(conn, "INSERT INTO prompt_orders VALUES (?, ?, ?, ?) ON CONFLICT (policy, tenant, "
                              "agent) DO UPDATE SET records=excluded.records", (*args, records))
        except Exception as exc:
            error = self._failure(exc)
            if error is None:
                raise
            raise error from None

    # --- operators ---------------------------------------------------------------------

    def reset(self, key: AgentKey) -> bool:
        """Forget one key (round, queue, ceilings, history). True when something was stored."""
        with self.transaction(write=True, lock=key) as conn:
            assert conn is not None
            args = (key.policy, key.tenant, key.agent)
            row = self._execute(conn, "SELECT round FROM agents WHERE policy=? AND tenant=? AND agent=?",
                                args).fetchone()
            found = row is not None and not (self._placeholders and row[0] == 0)
            self._execute(conn, "DELETE FROM agents WHERE policy=? AND tenant=? AND agent=?", args)
            self._execute(conn, "DELETE FROM ceilings WHERE policy=? AND tenant=? AND agent=?", args)
            self._execute(conn, "DELETE FROM history WHERE policy=? AND tenant=? AND agent=?", args)
            if self._holds_prompt_orders(conn):
                self._execute(conn, "DELETE FROM prompt_orders WHERE policy=? AND tenant=? AND agent=?", args)
        return bool(found)

    def export(self, agent: str | None = None, *, tenant: str | None = None) -> dict[str, Any]:
        """Every stored key (or one agent's, one tenant's) as JSON-ready data. With ``tenant`` the
        export holds only that tenant's keys: give one to a tenant, never the whole file."""
        _one_tenant(tenant)
        with self.transaction(write=False) as conn:  # one snapshot of every key
            keys = [] if conn is None else self._keys(conn, agent, None, tenant)
            agents = [self.load(key, conn).to_dict() for key in keys]
        return {"schema": EXPORT_SCHEMA, "agents": agents}


    def import_state(self, states: Sequence[AgentState]) -> int:
        """Write exported states (:func:`parse_export`) in one transaction: all or none. A key
        already stored here is refused (reset it first), so an import never merges two histories."""
        with self.transaction(write=True) as conn:
            assert conn is not None
            for state in states:
                key = state.key
                found = self._execute(conn, "SELECT 1 FROM agents WHERE policy=? AND tenant=? AND agent=?",
                                      (key.policy, key.tenant, key.agent)).fetchone()
                if found is not None:
                    raise StateError(f"{self.address}: already holds state for policy {key.policy}, tenant "
                                     f"{key.tenant or '-'}, agent {key.agent}; nothing was imported "
                                     "(reset it first to replace it)")
                self._store(conn, state, replace=False)
        return len(states)


SCHEMA_VERSION_SQL = "SELECT value FROM memsolve_meta WHERE key='schema_version'"


def check_schema_version(where: str | Path, row: Sequence[Any] | None) -> int:
    """The stored schema version (the row of SCHEMA_VERSION_SQL); refuse a store whose version is
    newer than this memsolve, or missing or invalid; both backends read the same table. An older
    one is read as it is and migrated by the first write (:data:`MIGRATIONS`, :func:`migrate`)."""
    try:
        version = int(row[0]) if row else 0
    except (TypeError, ValueError):
        version = 0
    if version > SCHEMA_VERSION:
        raise StateError(f"{where}: state schema version {version} is newer than this memsolve supports "
                         f"({SCHEMA_VERSION}); upgrade memsolve")
    if version < 1:
        raise StateError(f"{where}: state schema version missing or invalid (left untouched)")
    return version


def migrate(execute: Any, version: int, schema: Any = lambda sql: sql) -> None:
    """Bring a store of schema ``version`` to SCHEMA_VERSION inside the caller's transaction:
    each migration's statements (``schema`` turns them into the backend's types), then the
    version."""
    for step in range(version, SCHEMA_VERSION):
        for statement in schema(MIGRATIONS[step]).strip().split(";"):
            if statement.strip():
                execute(statement)
    execute(f"UPDATE memsolve_meta SET value='{SCHEMA_VERSION}' WHERE key='schema_version'")


def _backend(address: str | Path) -> type[StateStore]:
    if isinstance(address, str) and address.startswith(("postgresql://", "postgres://")):
        # a backend found by name, as a plugin is: the PostgreSQL module builds on this one (and
        # needs the optional psycopg), so this module never imports it
        backend: type[StateStore] = importlib.import_module("memsolve.rounds.postgres").PostgresStore
        return backend
    return SQLiteStore


class SQLiteStore(StateStore):
    """An embedded SQLite state file. Opening it never creates it; the first write does."""

    def __init__(self, path: str | Path, *, timeout: float = 60.0) -> None:
        self.path = self.address = str(path)
        self.timeout = timeout

    # --- connection and schema --------------------------------------------------------


    @contextmanager
    def _connect(self, write: bool) -> Iterator[sqlite3.Connection | None]:
        exists = Path(self.path).exists()
        if not exists and not write:
            yield None  # nothing stored yet: every key is at round 1
            return
        if exists and Path(self.path).is_dir():
            raise StateError(f"{self.path}: is a directory, not a state file")
        try:
            conn = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
        except sqlite3.Error as exc:
            raise StateError(f"{self.path}: cannot open state file: {exc}") from None
        try:
            try:
                conn.execute("PRAGMA synchronous=FULL")
            except _OPENING_FAILURES as exc:
                raise self._error(exc) from None
            yield conn
        finally:
            conn.close()

    @contextmanager
    def transaction(self, write: bool = True, lock: AgentKey | None = None) -> Iterator[sqlite3.Connection | None]:
        """One transaction: IMMEDIATE (holding the file's write lock, which serialises every key's
        rounds, ``lock`` included) when writing, rolled back on error."""
        with self._connect(write) as conn:
            if conn is None:
                yield None
                return
            try:
                conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            except _OPENING_FAILURES as exc:
                raise self._error(exc) from None
            try:
                # a file whose first round never committed (killed, or empty) holds no state yet
                ready = self._check_schema(conn, create=write)
                yield conn if ready else None
                conn.execute("COMMIT" if write else "ROLLBACK")
            except sqlite3.Error as exc:
                # wherever it surfaces (a read inside a round, a write, the commit): a corrupt
                # page, a full disk, a read-only file. Rolled back, so the file is as it was.
                _rollback(conn)
                raise self._error(exc) from None
            except BaseException:
                _rollback(conn)
                raise

    def _check_schema(self, conn: sqlite3.Connection, create: bool) -> bool:
        """True when the file holds memsolve's schema (creating it when ``create``)."""
        try:
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchall()}
        except _OPENING_FAILURES as exc:
            raise self._error(exc) from None
        if not tables and app_id == 0:
            if not create:
                return False
            for statement in SCHEMA_SQL.strip().split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute("INSERT INTO memsolve_meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
            return True
        if app_id != APPLICATION_ID or "memsolve_meta" not in tables:
            raise StateError(f"{self.path}: not a memsolve state file (left untouched)")
        version = check_schema_version(self.path, conn.execute(SCHEMA_VERSION_SQL).fetchone())
        if version < SCHEMA_VERSION and create:
            migrate(conn.execute, version)
        return True

    def _holds_prompt_orders(self, conn: sqlite3.Connection) -> bool:
        return conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='prompt_orders'").fetchone() \
            is not None

    def _corrupt(self, reason: str = "database disk image is malformed") -> StateError:
        """The error for a file whose pages or values are damaged (``reason`` never quotes
        stored values: they may be another tenant's data)."""
        return StateError(f"{self.path}: state file is corrupt ({reason}); left untouched")

    def _execute(self, conn: sqlite3.Connection, sql: str, args: Sequence[Any] = ()) -> sqlite3.Cursor:
        return conn.execute(sql, args)

    def _execute_many(self, conn: sqlite3.Connection, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        conn.executemany(sql, rows)

    def _failure(self, exc: Exception) -> StateError | None:
        return self._error(exc) if isinstance(exc, sqlite3.DatabaseError) else None

    def _error(self, exc: sqlite3.Error | UnicodeDecodeError) -> StateError:
        if isinstance(exc, UnicodeDecodeError):
            return self._corrupt("malformed database schema")
        text = str(exc)
        name = getattr(exc, "sqlite_errorname", "")  # Python 3.11+
        if name.startswith("SQLITE_NOTADB") or "not a database" in text:
            return StateError(f"{self.path}: not a memsolve state file or corrupt ({text}); left untouched")
        if name.startswith("SQLITE_CORRUPT") or "malformed" in text:
            return self._corrupt()
        if "could not decode" in text.lower():  # quotes the stored bytes: never echo them
            return self._corrupt("a stored text is not valid UTF-8")
        if "readonly" in text or "read-only" in text:
            return StateError(f"{self.path}: state file is read-only ({text})")
        if "locked" in text or "busy" in text:
            return StateError(f"{self.path}: state file is locked by another round ({text})")
        if "disk" in text and "full" in text:
            return StateError(f"{self.path}: disk full while writing state; the previous round is intact")
        return StateError(f"{self.path}: state file error: {text}")

def _rollback(conn: sqlite3.Connection) -> None:
    """Roll back if a transaction is open; SQLite may already have rolled back (a full disk, an
    I/O error), and closing the connection rolls back whatever is left."""
    if conn.in_transaction:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass


def _is_int(value: Any) -> bool:
    return type(value) is int


def _is_number(value: Any) -> bool:
    return type(value) in (int, float) and math.isfinite(value)


def _changed(current: Ceiling | None, level: str) -> bool:
    return current is None or current.level != level


# --- import: an exported document, checked field by field --------------------------------

EXPORT_SCHEMA = "memsolve/state/v1"
_AGENT_FIELDS = ("policy", "tenant", "agent", "round", "queue", "ceilings", "history")
_HISTORY_FIELDS = ("round", "queue_before", "queue_after", "lambda", "tokens_used", "budget", "objective", "refresh",
                   "levels", "result_sha256")


def parse_export(doc: Any) -> list[AgentState]:
    """The states of a ``state export`` document (a :class:`memsolve.source.Document`): every
    field checked, each error one :class:`InputError` naming its file, line and field."""
    data = doc.data

    def need(ok: bool, path: tuple[Any, ...], message: str) -> None:
        if not ok:
            raise doc.error(path, message)

    need(isinstance(data, dict) and data.get("schema") == EXPORT_SCHEMA and isinstance(data.get("agents"), list), (),
         f"not a memsolve state export (expected `schema: {EXPORT_SCHEMA}` and `agents`)")
    states: list[AgentState] = []
    seen: set[AgentKey] = set()
    for i, entry in enumerate(data["agents"]):
        at: tuple[Any, ...] = ("agents", i)
        need(isinstance(entry, dict), at, "expected an object")
        _only(doc, at, entry, _AGENT_FIELDS, _AGENT_FIELDS)
        for name in ("policy", "agent"):
            need(type(entry[name]) is str and entry[name] != "", (*at, name), "expected a non-empty text")
        need(entry["tenant"] is None or type(entry["tenant"]) is str, (*at, "tenant"), "expected a text or null")
        need(_is_int(entry["round"]) and entry["round"] >= 1, (*at, "round"), "expected an integer >= 1")
        need(_is_number(entry["queue"]) and entry["queue"] >= 0, (*at, "queue"), "expected a number >= 0")
        key = AgentKey(entry["policy"], entry["tenant"] or "", entry["agent"])
        need(key not in seen, at, "the same policy, tenant and agent twice")
        seen.add(key)
        need(isinstance(entry["ceilings"], dict), (*at, "ceilings"), "expected an object")
        ceilings: dict[str, Ceiling] = {}
        for rid, value in entry["ceilings"].items():
            where = (*at, "ceilings", rid)
            need(isinstance(value, dict), where, "expected an object with `level` and `round`")
            _only(doc, where, value, ("level", "round"), ("level", "round"))
            need(type(value["level"]) is str and value["level"] != "", (*where, "level"), "expected a level name")
            need(_is_int(value["round"]) and 1 <= value["round"] < entry["round"], (*where, "round"),
                 "expected the round that set it (an integer from 1 to the agent's round - 1)")
            ceilings[rid] = Ceiling(value["level"], value["round"])
        need(isinstance(entry["history"], list), (*at, "history"), "expected a list")
        history: list[RoundRow] = []
        for j, h in enumerate(entry["history"]):
            where = (*at, "history", j)
            need(isinstance(h, dict), where, "expected an object")
            _only(doc, where, h, _HISTORY_FIELDS, (*_HISTORY_FIELDS, "occupancy"))  # occupancy: derived
            need(_is_int(h["round"]) and 1 <= h["round"] < entry["round"]
                 and (not history or h["round"] > history[-1].round), (*where, "round"),
                 "expected rounds in increasing order, each below the agent's round")
            for name in ("queue_before", "queue_after", "lambda", "objective"):
                need(_is_number(h[name]), (*where, name), "expected a finite number")
            for name in ("tokens_used", "budget"):
                need(_is_int(h[name]) and h[name] >= 0, (*where, name), "expected an integer >= 0")
            need(type(h["refresh"]) is bool, (*where, "refresh"), "expected true or false")
            need(isinstance(h["levels"], dict) and all(_is_int(v) and v >= 0 for v in h["levels"].values()),
                 (*where, "levels"), "expected an object of counts per level")
            need(type(h["result_sha256"]) is str and len(h["result_sha256"]) == 64, (*where, "result_sha256"),
                 "expected a SHA-256 in hex")
            history.append(RoundRow(h["round"], h["queue_before"], h["queue_after"], h["lambda"], h["tokens_used"],
                                    h["budget"], h["objective"], h["refresh"], dict(sorted(h["levels"].items())),
                                    h["result_sha256"]))
        states.append(AgentState(key, entry["round"], entry["queue"], ceilings, tuple(history)))
    return states


def _only(doc: Any, at: tuple[Any, ...], value: dict[str, Any], required: Sequence[str],
          allowed: Sequence[str]) -> None:
    for name in value:
        if name not in allowed:
            raise doc.error((*at, name), f"unknown field; expected {', '.join(f'`{a}`' for a in allowed)}", key=True)
    for name in required:
        if name not in value:
            raise doc.error(at, f"missing field `{name}`")


def _one_tenant(tenant: str | None) -> None:
    """A tenant asked for by name: never empty, which is the key of the runs with no tenant in
    force (every tenant's records)."""
    if tenant == "":
        raise InputError("the tenant must not be empty (--tenant): runs with no tenant in force are kept under "
                         "it; give a tenant name, or no tenant for every key")
