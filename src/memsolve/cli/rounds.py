"""The rounds half on the command line: ``state show|reset|export`` and ``simulate``."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..errors import InputError, StateError
from ..policies.load import load_policy
from ..render import capture, state_tables, trajectory_table
from ..rounds.state import AgentKey, StateStore
from .common import check_outputs, format_option, guarded, write_output


@click.group()
def state() -> None:
    """Operators' tools for the state file: show, reset, export."""


def _existing(state_path: str) -> StateStore:
    if not Path(state_path).exists():
        raise StateError(f"{state_path}: no such state file")
    return StateStore(state_path)


def _keys(store: StateStore, agent: str, policy_path: str | None, tenant: str | None) -> list[AgentKey]:
    policy = None if policy_path is None else load_policy(policy_path)
    return store.keys(agent, policy=None if policy is None else policy.name,
                      tenant=tenant if tenant is not None or policy is None else policy.tenant)


def _state_options(func):
    for option in reversed([
        click.option("--state", "state_path", required=True, type=click.Path(dir_okay=False), help="State file."),
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
        click.echo(f"no state for agent `{agent}` in {state_path}")
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
@click.option("--state", "state_path", required=True, type=click.Path(dir_okay=False), help="State file.")
@click.option("--agent", help="Only this agent.")
@click.option("--tenant", help="Only this tenant's keys (what to hand a tenant: nothing of the others).")
@click.option("--out", type=click.Path(dir_okay=False), help="Write here (atomically) instead of stdout.")
@click.option("--force", is_flag=True, help="Replace --out if it exists.")
@guarded
def state_export(state_path, agent, tenant, out, force) -> None:
    """Every stored key as JSON (the operator's view; --tenant for one tenant's)."""
    check_outputs({"--out": out}, [("--state", state_path)])
    write_output(json.dumps(_existing(state_path).export(agent, tenant=tenant), indent=2) + "\n", out, force)


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
