"""The rounds tests' PostgreSQL: one throw-away server per test session (started on first use,
stopped at the end), a fresh schema per store; ``store_address`` runs a test on both backends."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ..conftest import needs
from . import pg

HAVE_POSTGRES = pg.bindir() is not None and importlib.util.find_spec("psycopg") is not None
needs_postgres = needs(HAVE_POSTGRES, "PostgreSQL (initdb, pg_ctl) and psycopg (the pg extra)")


@pytest.fixture(scope="session")
def postgres() -> Iterator[str]:
    """The session's server: the address of its `postgres` database."""
    with pg.server() as address:
        yield address


@pytest.fixture
def pg_address(postgres: str) -> str:
    """An address whose tables live in a new, empty schema."""
    return pg.fresh_schema(postgres)


BACKENDS = [pytest.param("sqlite", id="sqlite"), pytest.param("postgresql", id="postgresql", marks=needs_postgres)]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def store_address(backend: str, request: pytest.FixtureRequest, tmp_path_factory) -> Callable[[], str]:
    """A maker of addresses of new, empty stores of the test's backend (a file path or a
    postgresql:// address)."""
    if backend == "sqlite":
        return lambda: str(Path(tmp_path_factory.mktemp("st")) / "s.db")
    server = request.getfixturevalue("postgres")
    return lambda: pg.fresh_schema(server)
