"""``mcp``: the Model Context Protocol server over stdio (DESIGN §12)."""

from __future__ import annotations

import click

from ..adapters import SOURCES
from ..errors import InputError
from .common import check_outputs, guarded, long_running


@click.command()
@click.option("--policy", "policy_path", required=True, type=click.Path(dir_okay=False), help="Policy YAML file.")
@click.option("--records", "records_path", type=click.Path(dir_okay=False),
              help="Records file (.json, .jsonl, .yaml); default: the policy's `records:`.")
@click.option("--from", "source", type=click.Choice(list(SOURCES)),
              help="The records file is this source's export (imported as `memsolve import` does).")
@click.option("--state", "state_path", type=click.Path(dir_okay=False),
              help="SQLite state file: each select_context is one round for --agent.")
@click.option("--agent", help="Agent whose state the rounds read and write (with --state).")
@guarded
def mcp(policy_path, records_path, source, state_path, agent) -> None:
    """A Model Context Protocol server over stdio: select_context and explain for an agent.

    The policy, the records and the state come from this command line; the tools take only what
    changes per turn (query, budget, session, now). Standard output carries the protocol, so the
    records cannot come from standard input. Needs the `mcp` extra: pip install 'memsolve[mcp]'.
    """
    if records_path == "-":
        raise InputError("--records - is standard input, which carries the protocol here; name a file")
    if policy_path == "-":
        raise InputError("--policy - is standard input, which carries the protocol here; name a file")
    if (state_path is None) != (agent is None):
        raise InputError("--state and --agent go together")
    try:
        from ..serve_mcp import build_server
    except ImportError as exc:
        raise InputError(f"the MCP server needs the `mcp` package ({exc.name} is missing): "
                         "pip install 'memsolve[mcp]'") from None
    from ..policies.load import load_policy
    from ..records import load_records
    from ..selector import Selector

    policy = load_policy(policy_path)
    records_path = records_path or policy.records
    if records_path is None:
        raise InputError("no records: pass --records or set `records:` in the policy", policy.locate("records"))
    if state_path is not None:  # before the server starts: else every call would fail the same way
        check_outputs({"--state": state_path}, [("--policy", policy_path), ("--records", str(records_path))])
        _check_state(state_path)
    if source is not None:
        records = load_records(_imported(source, str(records_path), policy.tenant))
    else:
        records = load_records(records_path)
    selector = Selector(policy, records, state=state_path, agent=agent)
    long_running()
    build_server(selector).run("stdio")


def _imported(source: str, file: str, tenant: str | None) -> list:
    """The export's records. Under a tenant policy, items of other or unknown tenants that cannot
    be mapped are left out and counted (never shown, DESIGN §9); only the tenant's own fail."""
    from ..adapters import Options, import_file

    if tenant is None:
        return list(import_file(source, file).records)
    imported = import_file(source, file, Options(skip_unmappable=True))
    own = [skipped for skipped in imported.skipped if skipped.tenant == tenant]
    if own:
        raise own[0].error
    if imported.skipped:  # standard error: standard output carries the protocol
        click.echo(f"--from {source}: left out {len(imported.skipped)} unmappable items of other or unknown "
                   "tenants", err=True)
    return list(imported.records)


def _check_state(state_path: str) -> None:
    """The state store opens, and a file there is a state file (not the records, say)."""
    from pathlib import Path

    from ..errors import StateError
    from ..rounds.state import SQLiteStore, StateStore

    store = StateStore(state_path)
    if isinstance(store, SQLiteStore) and not Path(state_path).parent.is_dir():
        raise StateError(f"{state_path}: no directory {Path(state_path).parent} to keep the state file in")
    with store, store.transaction(write=False):
        pass


COMMANDS = (mcp,)
