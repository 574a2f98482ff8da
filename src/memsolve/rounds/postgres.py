"""The PostgreSQL state store: the SQLite store's tables and answers, for many workers on many
machines (``--state postgresql://user@host/db``; psycopg 3, the ``pg`` extra).

One round is one transaction on a READ COMMITTED connection that first takes the key's lock,
then reads the key's state (each statement sees every round committed before it), solves, and
writes. The lock is a transaction-scoped advisory lock on a 64-bit hash of (policy, tenant,
agent) by default; ``lock="row"`` takes a row lock on the key's ``agents`` row instead (inserting
a placeholder row for a key's first round). benchmarks/state_locks.py measures both: equal under
contention for one key; without contention the advisory lock-only transaction is ~1.5x faster
(0.32 against 0.55 ms median; new keys 0.33 against 1.37 ms), full rounds equal within noise.
The advisory lock is one statement where the row lock needs one to three, covers a key that has
no row yet without a placeholder, and is released with the transaction whatever ends it
(commit, rollback, a dropped connection, a client killed with -9). Reads outside a round
(``state show``, export, a dry run) are one REPEATABLE READ READ ONLY transaction: a consistent
snapshot, no lock, never waiting for a round.

The tables live in the connection's current schema: an address with
``?options=-csearch_path%3Dteam_a`` keeps a second state apart inside one database. The first
write on a connection creates the tables if they are missing, in a transaction of its own under
a fixed advisory lock, so many first rounds at once create them once (an empty schema left by a
round that then failed holds no state). Each thread keeps one connection per store (opened on
first use, replaced when it breaks or after a fork; one the server closed while it sat idle,
as a server restart does, is replaced and the transaction begun again, since nothing of it
was done); :meth:`PostgresStore.close` closes them, and so does the store's garbage collection.

Errors are one line: the address without its password (not shown at all when it does not
parse), what failed, and the first line of the server's or libpq's message with every form of
the password in it replaced by ``***``. A connection lost inside a round (the server
restarted, ``pg_terminate_backend``, a network cut) rolls the round back on the server: nothing of it is stored.
"""

from __future__ import annotations

import json
import os
import threading
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, unquote_plus, urlencode, urlsplit, urlunsplit

from ..errors import StateError
from .state import (
    SCHEMA_SQL,
    SCHEMA_VERSION,
    SCHEMA_VERSION_SQL,
    AgentKey,
    StateStore,
    check_schema_version,
    migrate,
)

LOCKS = ("advisory", "row")
_SCHEMA_LOCK = 0x4D454D53  # "MEMS": the advisory lock held while creating the tables
# SQLite's schema in PostgreSQL's types: 64-bit integers (token counts reach 10^12) and doubles
def _pg(sql: str) -> str:
    return sql.replace("INTEGER", "BIGINT").replace("REAL", "DOUBLE PRECISION")


_PG_SCHEMA = _pg(SCHEMA_SQL)


HIDDEN = "postgresql://<address not shown>"


def redact(address: str) -> str:
    """The address as messages show it: no password, in the user part or the query; an address
    that does not parse (or whose password holds an unencoded ``/``, ``?`` or ``#``, so that
    the user part reads as a host and port) is not shown at all."""
    if _misplaced_at(address):
        return HIDDEN
    try:
        parts = urlsplit(address)
    except ValueError:  # "Invalid IPv6 URL"
        return HIDDEN
    netloc = parts.netloc
    if "@" in netloc:
        user, _, host = netloc.rpartition("@")
        netloc = f"{user.partition(':')[0]}@{host}"
    query = urlencode([(k, "***" if k == "password" else v) for k, v in parse_qsl(parts.query)], safe="/*")
    return hide(urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment)), address)


def hide(text: str, address: str) -> str:
    """``text`` with every form of ``address``'s password replaced by ``***``: libpq quotes the
    token it fails to parse, which may be the password or a piece of it."""
    for secret in sorted(_secrets(address), key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def _secrets(address: str) -> set[str]:
    """The address's password as written and percent-decoded: from the user part, the query,
    and, when the password holds an unencoded ``/``, ``?`` or ``#``, everything after ``user:``
    up to the last ``@`` and the piece libpq reads as a port."""
    _, sep, rest = address.partition("://")
    if not sep:
        return set()
    found: list[str] = []
    authority = rest[:_authority_end(rest)]
    if "@" in authority:
        user = authority.rpartition("@")[0]
        if ":" in user:
            found.append(user.partition(":")[2])
    elif _misplaced_at(address):
        head = rest[: rest.rfind("@")]
        found += [head.partition(":")[2], authority.partition(":")[2]]
    query = rest.partition("?")[2]
    for item in query.replace("#", "&").split("&"):
        key, eq, value = item.partition("=")
        if eq and unquote(key) == "password":
            found.append(value)
    return {form for secret in found for form in (secret, unquote(secret), unquote_plus(secret)) if form}


def _authority_end(rest: str) -> int:
    return min((rest.find(c) for c in "/?#" if c in rest), default=len(rest))


def _misplaced_at(address: str) -> bool:
    """True when an ``@`` comes after the authority while the authority has none but holds a
    ``:``: a password with an unencoded ``/``, ``?`` or ``#`` (``u:pa/ss@host``), which libpq
    reads as host ``u`` and port ``pa``. (A valid ``host:5432/db?user=a@b`` is taken for one
    too: messages show neither its address nor its port; it connects as before.)"""
    _, sep, rest = address.partition("://")
    end = _authority_end(rest)
    return bool(sep) and "@" not in rest[:end] and ":" in rest[:end] and "@" in rest[end:]


class PostgresStore(StateStore):
    """The state in a PostgreSQL database. Opening it connects on first use; the first write
    creates the tables."""

    def __init__(self, address: str | Path, *, timeout: float = 60.0, lock: str = "advisory") -> None:
        if lock not in LOCKS:
            raise ValueError(f"lock must be one of {LOCKS}")
        try:
            import psycopg  # noqa: F401  (the pg extra; imported here so the core never needs it)
        except ImportError:
            raise StateError("a postgresql:// state needs psycopg 3: pip install 'memsolve[pg]'") from None
        self.url = str(address)
        self.address = redact(self.url)
        self.timeout = timeout
        self.lock = lock
        self._placeholders = lock == "row"
        self._connections: dict[int, Any] = {}  # thread id -> connection
        self._guard = threading.Lock()
        self._finalizer = weakref.finalize(self, _close_all, self._connections)

    def close(self) -> None:
        """Close every connection this store opened (it reconnects if used again)."""
        _close_all(self._connections)

    # --- connection and schema --------------------------------------------------------

    def _connection(self) -> Any:
        import psycopg

        thread = threading.get_ident()
        conn = self._connections.get(thread)
        if conn is not None and not conn.closed and not conn.broken and conn._memsolve_pid == os.getpid():
            return conn
        if conn is not None and getattr(conn, "_memsolve_pid", None) == os.getpid():
            conn.close()
        try:
            conn = psycopg.connect(self.url, autocommit=True, connect_timeout=max(1, round(self.timeout)))
            # waits for another round's lock end after `timeout` (lock_timeout covers advisory locks too)
            conn.execute(f"SET lock_timeout = {max(1, round(self.timeout * 1000))}")
        except psycopg.Error as exc:
            raise StateError(f"{self.address}: cannot connect to the state database "
                             f"({self._shown(exc)})") from None
        conn._memsolve_pid = os.getpid()  # a forked child opens its own
        conn._memsolve_ready = False  # the schema is checked once per connection
        with self._guard:
            self._connections[thread] = conn
        return conn

    @contextmanager
    def transaction(self, write: bool = True, lock: AgentKey | None = None) -> Iterator[Any]:
        """One transaction, rolled back on error; None when nothing is stored and not ``write``.

        A connection the server closed while it sat idle (a server restart, an idle timeout,
        ``pg_terminate_backend``) shows only when it is used: a failure up to and including the
        lock statement, on a connection that is then broken, is retried once on a new one
        (nothing of the transaction was done yet). Past the lock it is the caller's error."""
        import psycopg

        for attempt in (1, 2):
            conn = self._connection()
            tx = conn.transaction()
            try:
                if write and not conn._memsolve_ready:
                    self._create(conn)
                tx.__enter__()
                try:
                    if not write:
                        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                    ready = self._ready(conn)
                    if ready and lock is not None:
                        self._lock(conn, lock)
                except BaseException as exc:
                    tx.__exit__(type(exc), exc, exc.__traceback__)
                    raise
            except psycopg.OperationalError as exc:
                if attempt == 1 and conn.broken:
                    continue
                raise self._error(exc) from None
            except psycopg.Error as exc:
                raise self._error(exc) from None
            break
        try:
            try:
                yield conn if ready else None
            except BaseException as exc:
                if not tx.__exit__(type(exc), exc, exc.__traceback__):
                    raise
            else:
                tx.__exit__(None, None, None)
        except psycopg.Error as exc:
            raise self._error(exc) from None

    def _create(self, conn: Any) -> None:
        """Create the tables unless they exist, or migrate them from an older schema version, in a
        transaction of its own, under a session lock: a transaction that starts after the lock
        sees every table created before it (one that waited for a lock inside itself would still
        see its own earlier look-ups)."""
        conn.execute("SELECT pg_advisory_lock(%s)", (_SCHEMA_LOCK,))
        try:
            with conn.transaction():
                meta, agents = conn.execute("SELECT to_regclass('memsolve_meta'), to_regclass('agents')").fetchone()
                if meta is None and agents is None:
                    for statement in _PG_SCHEMA.strip().split(";"):
                        if statement.strip():
                            conn.execute(statement)
                    conn.execute("INSERT INTO memsolve_meta VALUES ('schema_version', %s)", (str(SCHEMA_VERSION),))
                elif meta is not None:
                    version = check_schema_version(self.address, conn.execute(SCHEMA_VERSION_SQL).fetchone())
                    if version < SCHEMA_VERSION:
                        migrate(conn.execute, version, _pg)
        finally:
            if not conn.broken:
                conn.execute("SELECT pg_advisory_unlock(%s)", (_SCHEMA_LOCK,))

    def _ready(self, conn: Any) -> bool:
        """True when the database holds memsolve's tables of a version this memsolve reads."""
        if conn._memsolve_ready:
            return True
        meta, agents = conn.execute("SELECT to_regclass('memsolve_meta'), to_regclass('agents')").fetchone()
        if meta is None and agents is None:
            return False
        if meta is None:
            raise StateError(f"{self.address}: holds an `agents` table that is not memsolve's (no memsolve_meta); "
                             "left untouched")
        version = check_schema_version(self.address, conn.execute(SCHEMA_VERSION_SQL).fetchone())
        # an older version is read as it is; the next write on this connection migrates it first
        conn._memsolve_ready = version == SCHEMA_VERSION
        return True

    def _holds_prompt_orders(self, conn: Any) -> bool:
        return bool(conn._memsolve_ready) or conn.execute("SELECT to_regclass('prompt_orders')").fetchone()[0] \
            is not None

    def _lock(self, conn: Any, key: AgentKey) -> None:
        """Hold ``key``'s lock until the transaction ends: the key's rounds run one at a time."""
        if self.lock == "advisory":
            name = json.dumps([key.policy, key.tenant, key.agent])
            conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (name,))
            return
        args = (key.policy, key.tenant, key.agent)
        where = "FROM agents WHERE policy=%s AND tenant=%s AND agent=%s FOR UPDATE"
        if conn.execute(f"SELECT 1 {where}", args).fetchone() is None:
            # a first round: a placeholder row (round 0, read as no state) to lock; a concurrent first
            # round waits on its key. The round's write replaces it, a rollback removes it
            conn.execute("INSERT INTO agents VALUES (%s, %s, %s, 0, 0) ON CONFLICT DO NOTHING", args)
            conn.execute(f"SELECT 1 {where}", args)

    def _execute(self, conn: Any, sql: str, args: Sequence[Any] = ()) -> Any:
        return conn.execute(_sql(sql), args)

    def _execute_many(self, conn: Any, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if rows:
            with conn.cursor() as cursor:
                cursor.executemany(_sql(sql), rows)

    # --- errors -------------------------------------------------------------------------

    def _failure(self, exc: Exception) -> StateError | None:
        import psycopg

        return self._error(exc) if isinstance(exc, psycopg.Error) else None

    def _error(self, exc: Exception) -> StateError:
        import psycopg

        if isinstance(exc, psycopg.errors.LockNotAvailable):
            return StateError(f"{self.address}: the agent is locked by another round for longer than "
                              f"{self.timeout:g} s; nothing was written")
        conn = self._connections.get(threading.get_ident())
        if isinstance(exc, psycopg.OperationalError) and (conn is None or conn.closed or conn.broken):
            return StateError(f"{self.address}: connection to the state database lost ({self._shown(exc)}); "
                              "the transaction was rolled back, nothing of it was written")
        return StateError(f"{self.address}: state database error: {self._shown(exc)}")

    def _shown(self, exc: Exception) -> str:
        """The first line of a psycopg or server message, without the address's password."""
        return hide(_first_line(exc), self.url)


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[0].strip() if text else type(exc).__name__


_SQL: dict[str, str] = {}


def _sql(sql: str) -> str:
    """The store's statements use ``?``; psycopg's placeholder is ``%s``."""
    converted = _SQL.get(sql)
    if converted is None:
        converted = _SQL[sql] = sql.replace("?", "%s")
    return converted


def _close_all(connections: dict[int, Any]) -> None:
    for thread, conn in list(connections.items()):
        if getattr(conn, "_memsolve_pid", None) == os.getpid():
            conn.close()
        connections.pop(thread, None)
