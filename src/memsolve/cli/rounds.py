"""The rounds half on the command line: ``state show|reset|export|import`` and ``simulate``.

``--state`` is a SQLite file or a ``postgresql://`` address (:class:`memsolve.StateStore`);
``memsolve state export --state s.db | memsolve state import --state postgresql://…`` moves a
SQLite state into PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..errors import InputError, StateError
from ..policies.load import load_policy
from ..render import capture, state_tables, trajectory_table
from ..rounds.state import AgentKey, SQLiteStore, StateStore, parse_export
from .common import check_outputs, format_option, guarded, write_output


@click.group()
def state() -> None:
    """Operators' tools for the state file: show, reset, export, import."""


def _existing(state_path: str) -> StateStore:
    store = StateStore(state_path)
    if isinstance(store, SQLiteStore) and not Path(state_path).exists():
        raise StateError(f"{state_path}: no such state file")
    return store


def _keys(store: StateStore, agent: str, policy_path: str | None, tenant: str | None) -> list[AgentKey]:
    policy = None if policy_path is None else load_policy(policy_path)
    return store.keys(agent, policy=None if policy is None else policy.name,
                      tenant=tenant if tenant is not None or policy is None else policy.tenant)


def _state_options(func):
    for option in reversed([
        click.option("--state", "state_path", required=True, type=click.Path(dir_okay=False),
                     help="State file, or a postgresql:// address."),
        click.option("--agent", required=True, help="Agent name."),
        click.option("--policy", "policy_path", type=click.Path(dir_okay=False),
                     help="Only this policy's state (and show the next round's price)."),
        click.option("--tenant", help="Only this tenant's state."),
    ]):
        func = option(func)
    return func


@state.command("show")
@_state_options
@format_option(("table", "json"))
@guarded
def state_show(state_path, agent, policy_path, tenant, fmt) -> None:
    """Round, queue Q, next price λ, fidelity ceilings and history of an agent."""
    store = _existing(state_path)
    states = [store.load(key) for key in _keys(store, agent, policy_path, tenant)]
    policy = load_policy(policy_path) if policy_path else None
    next_lambda = [None if policy is None else s.next_price(policy).lam for s in states]
    if fmt == "json":
        payload = [{**s.to_dict(), **({} if lam is None else {"next_lambda": lam})}
                   for s, lam in zip(states, next_lambda, strict=True)]
        click.echo(json.dumps({"agents": payload}, indent=2))
    elif not states:
        click.echo(f"no state for agent `{agent}` in {store.address}")
    else:
        click.echo(capture(state_tables, states, next_lambda), nl=False)


@state.command("reset")
@_state_options
@click.option("--yes", is_flag=True, help="Confirm: forget round, queue, ceilings and history.")
@guarded
def state_reset(state_path, agent, policy_path, tenant, yes) -> None:
    """Forget an agent's state (all its policies, or --policy's)."""
    if not yes:
        raise InputError("reset forgets the pricing queue, ceilings and history; pass --yes to confirm")
    store = _existing(state_path)
    keys = _keys(store, agent, policy_path, tenant)
    for key in keys:
        store.reset(key)
        click.echo(f"reset: policy {key.policy}, tenant {key.tenant or '-'}, agent {key.agent}")
    if not keys:
        click.echo(f"nothing stored for agent `{agent}`")


@state.command("export")
@click.option("--state", "state_path", required=True, type=click.Path(dir_okay=False),
              help="State file, or a postgresql:// address.")
@click.option("--agent", help="Only this agent.")
@click.option("--tenant", help="Only this tenant's keys (what to hand a tenant: nothing of the others).")
@click.option("--out", type=click.Path(dir_okay=False), help="Write here (atomically) instead of stdout.")
@click.option("--force", is_flag=True, help="Replace --out if it exists.")
@guarded
def state_export(state_path, agent, tenant, out, force) -> None:
    """Every stored key as JSON (the operator's view; --tenant for one tenant's)."""
    check_outputs({"--out": out}, [("--state", state_path)])
    with _existing(state_path) as store:
        write_output(json.dumps(store.export(agent, tenant=tenant), indent=2) + "\n", out, force)


@state.command("import")
@click.argument("source", default="-", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--state", "state_path", required=True, type=click.Path(dir_okay=False),
              help="State file, or a postgresql:// address, to write into.")
@guarded
def state_import(source, state_path) -> None:
    """Write a `state export` document (a file, or - for stdin) into a state, all or nothing.

    A key the target already holds is refused (reset it first): an import never merges two
    histories. `memsolve state export --state s.db | memsolve state import --state postgresql://…`
    moves a SQLite state into PostgreSQL.
    """
    from ..source import load_document, parse_text

    check_outputs({"--state": state_path}, [] if source == "-" else [("SOURCE", source)])
    if source == "-":
        doc = parse_text(click.get_text_stream("stdin").read(), "<stdin>", "json")
    else:
        doc, _ = load_document(source, fmt="json")
    states = parse_export(doc)
    with StateStore(state_path) as store:
        count = store.import_state(states)
    click.echo(f"imported {count} key(s) into {store.address}")


@click.command()
@click.option("--policy", "policy_path", required=True, type=click.Path(dir_okay=False), help="Policy YAML file.")
@click.option("--rounds-file", "rounds_files", required=True, multiple=True, type=click.Path(dir_okay=False),
              help="JSON Lines, one record batch per round (repeatable; files run in order).")
@click.option("--agent", default="simulation", show_default=True)
@format_option(("table", "json", "csv"))
@click.option("--out", type=click.Path(dir_okay=False), help="Write the trajectory here (.json or .csv).")
@click.option("--plot", type=click.Path(dir_okay=False), help="Plot occupancy against alpha, and lambda (.svg/.png).")
@click.option("--force", is_flag=True, help="Replace --out and --plot if they exist.")
@guarded
def simulate(policy_path, rounds_files, agent, fmt, out, plot, force) -> None:
    """Run many rounds through the pricing queue (the same code path as --state) and report the trajectory."""
    from ..rounds.simulate import load_rounds, run_simulation, trajectory_csv, trajectory_json

    check_outputs({"--out": out, "--plot": plot},
                  [("--policy", policy_path), *(("--rounds-file", path) for path in rounds_files)])
    policy = load_policy(policy_path)
    batches = [batch for path in rounds_files for batch in load_rounds(path)]
    rows = run_simulation(policy, batches, agent=agent)
    payload = trajectory_json(policy, rows)
    if out:
        write_output(trajectory_csv(rows) if out.endswith(".csv") else payload, out, force)
    if plot:
        from ..plot import plot_trajectory

        plot_trajectory(rows, policy.pricing.alpha, plot, force=force, title=policy.name)
    if fmt == "json":
        click.echo(payload, nl=False)
    elif fmt == "csv":
        click.echo(trajectory_csv(rows), nl=False)
    else:
        title = f"Simulation: {policy.name} (alpha {policy.pricing.alpha:g})"
        click.echo(capture(trajectory_table, title, rows), nl=False)


COMMANDS = (state, simulate)
