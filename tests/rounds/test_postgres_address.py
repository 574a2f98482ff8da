"""A postgresql:// address in messages: never its password, even when libpq cannot parse the
address and quotes it (no server needed: these addresses fail before any connection)."""

from __future__ import annotations

import importlib.util

import pytest

from memsolve.rounds.postgres import redact

from ..conftest import needs

pytestmark = needs(importlib.util.find_spec("psycopg") is not None, "psycopg (the pg extra)")

FLEET = ("--policy", "tests/data/fleet/policy.yaml", "--records", "tests/data/fleet/records/agent-1.json",
         "--tenant", "acme")

# (address, pieces of its password that no message may show, the address as messages show it)
ADDRESSES = [
    ("postgresql://u:se%ZZcret@localhost/db", ["se%ZZcret", "ZZcret", "secret"], "postgresql://u@localhost/db"),
    ("postgresql://u@localhost/db?password=x7%ZZq", ["x7%ZZq", "ZZq"], "postgresql://u@localhost/db?password=***"),
    # an unencoded `/` in the password: the authority ends at it, libpq reads `u:pq7` as host:port
    ("postgresql://u:pq7/zz9@localhost/db", ["pq7", "zz9"], "postgresql://<address not shown>"),
    ("postgresql://u:s3cr3t@[::1/db", ["s3cr3t"], "postgresql://<address not shown>"),
]


@pytest.mark.parametrize(("address", "secrets", "shown"), ADDRESSES, ids=["bad-escape", "query", "slash", "ipv6"])
def test_a_bad_address_is_one_line_without_its_password(cli, address: str, secrets: list[str], shown: str) -> None:
    assert redact(address) == shown
    for args in ((*FLEET, "--state", address, "--agent", "a"),
                 ("state", "show", "--state", address, "--agent", "a", *FLEET[:2])):
        result = cli(*args)
        assert result.exit_code == 2 and result.stdout == "" and result.stderr.count("\n") == 1, result.stderr
        assert result.stderr.startswith(f"error: {shown}: "), result.stderr
        assert not [s for s in secrets if s in result.stderr], result.stderr
