"""``mcp``: the Model Context Protocol server over stdio (DESIGN §12)."""

from __future__ import annotations

import click

from ..adapters import SOURCES
from ..errors import InputError
from .common import guarded


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
    if source is not None:
        from ..adapters import import_file

        records = load_records(list(import_file(source, str(records_path)).records))
    else:
        records = load_records(records_path)
    selector = Selector(policy, records, state=state_path, agent=agent)
    build_server(selector).run("stdio")


COMMANDS = (mcp,)
