"""``solve`` (the default command), ``validate`` and ``frontier``."""

from __future__ import annotations

import json
import sys

import click

from .. import pipeline
from ..context import Context
from ..errors import InputError, SolverError
from ..policies.load import load_policy
from ..render import RESULT_FORMATS, capture, frontier_table, result_table
from ..result import TRACE_MODES
from ..solver.engines import ENGINES
from .common import (
    EXIT_INPUT,
    EXIT_OK,
    Inputs,
    check_outputs,
    context_options,
    format_option,
    guarded,
    write_output,
)


@click.command()
@context_options
@click.option("--engine", type=click.Choice(list(ENGINES)), help="Override the policy's engine.")
@format_option(RESULT_FORMATS)
@click.option("--out", type=click.Path(dir_okay=False), help="Write the result here (atomically).")
@click.option("--force", is_flag=True, help="Replace --out if it exists.")
@click.option("--strict", is_flag=True, help="Exit 3 unless the optimum is proven.")
@click.option("--timings", is_flag=True, help="Print stage timings to stderr.")
@click.option("--state", "state_path", type=click.Path(dir_okay=False),
              help="State: a SQLite file or a postgresql:// address (pricing queue, fidelity ceilings, history).")
@click.option("--agent", help="Agent whose state this round reads and writes (with --state).")
@click.option("--refresh", is_flag=True, help="Rebuild candidates from the archive: clear ceilings, keep Q and t.")
@click.option("--dry-run", is_flag=True, help="Solve the round but write no state.")
@click.option("--trace", "trace_mode", type=click.Choice(list(TRACE_MODES)), default="full", show_default=True,
              help="Trace entries in the result: every record, the excluded ones, or none.")
@guarded
def solve(inputs: Inputs, context: Context, engine, fmt, out, force, strict, timings, state_path, agent, refresh,
          dry_run, trace_mode) -> None:
    """Solve one round and print the result."""
    if (state_path is None) != (agent is None):
        raise InputError("--state and --agent go together")
    if (refresh or dry_run) and state_path is None:
        raise InputError("--refresh and --dry-run need --state and --agent")
    check_outputs({"--out": out}, [("--state", state_path), *inputs.files()])
    clock = pipeline.Timings()
    policy, records = clock.time("load", inputs.load)
    if state_path is None:
        result = pipeline.run(policy, records, context, engine=engine, timings=clock, trace=trace_mode).result
    else:
        from ..rounds.state import StateStore  # sqlite3 and the state schema: only a round with state pays

        store = StateStore(state_path)
        result = store.round(policy, records, context, agent=agent, refresh=refresh, dry_run=dry_run, engine=engine,
                             timings=clock, trace=trace_mode)
    text = clock.time("render", lambda: result.json_parts() if fmt == "json" else capture(result_table, result))
    write_output(text, out, force)
    if timings:
        click.echo(f"timings: {clock.render()}", err=True)
    if strict and result.solver.status != "optimal" and result.solver.engine != "greedy":
        raise SolverError(f"not proven optimal ({result.solver.status}) and --strict was given")


@click.command()
@click.argument("policies", nargs=-1, required=True, type=click.Path(dir_okay=False))
def validate(policies) -> None:
    """Check policies against the schema and the semantic rules; exit 2 if any fails."""
    failed = 0
    for path in policies:
        try:
            policy = load_policy(path)
        except InputError as error:
            click.echo(f"error: {error.render()}", err=True)
            failed += 1
            continue
        click.echo(f"ok: {path} ({policy.name}, {len(policy.rules)} rules)")
    sys.exit(EXIT_INPUT if failed else EXIT_OK)


@click.command()
@context_options
@format_option(RESULT_FORMATS)
@click.option("--plot", type=click.Path(dir_okay=False), help="Also draw the step curve (.svg or .png).")
@click.option("--force", is_flag=True, help="Replace --plot if it exists.")
@guarded
def frontier(inputs: Inputs, context: Context, fmt, plot, force) -> None:
    """Best objective at every budget 0..B, as the breakpoints of the step curve.

    With --plot alone the plot is written and one line says where; an explicit --format also
    prints the frontier."""
    check_outputs({"--plot": plot}, inputs.files())
    policy, records = inputs.load()
    points = pipeline.frontier(policy, records, context)
    if plot:
        from ..plot import plot_frontier

        plot_frontier(points, plot, force=force, title=policy.name)
        if click.get_current_context().get_parameter_source("fmt") is click.core.ParameterSource.DEFAULT:
            click.echo(f"frontier: {len(points)} breakpoints, plot written to {plot}")
            return
    if fmt == "json":
        click.echo(json.dumps({"frontier": [{"budget": b, "objective": v} for b, v in points]}, indent=2))
    else:
        click.echo(capture(frontier_table, points), nl=False)


COMMANDS = (solve, validate, frontier)
