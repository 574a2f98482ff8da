"""The ``memsolve`` command: a thin layer over the library.

Exit codes: 0 ok · 1 audit/test failure · 2 usage or input error · 3 solver error.
Errors print one line to stderr (``error: file:line:column: path: message``), no traceback.
"""

from __future__ import annotations

import io
import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from .. import api
from ..context import Context
from ..errors import InputError, Location, MemsolveError, SolverError, StateError
from ..policies.load import load_policy
from ..policies.model import Policy
from ..records import RecordSet, load_records
from ..render import frontier_table, result_table

EXIT_OK, EXIT_FAILED, EXIT_INPUT, EXIT_SOLVER = 0, 1, 2, 3


class _DefaultSolve(click.Group):
    """``memsolve --policy P`` means ``memsolve solve --policy P``."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0].startswith("-") and args[0] not in ("--help", "-h", "--version"):
            args = ["solve", *args]
        return super().parse_args(ctx, args)


def _fail(error: MemsolveError) -> None:
    code = EXIT_SOLVER if isinstance(error, SolverError) else EXIT_INPUT
    text = error.render() if isinstance(error, InputError) else str(error)
    click.echo(f"error: {text}", err=True)
    sys.exit(code)


def guarded(func: Callable[..., Any]) -> Callable[..., Any]:
    """Turn memsolve errors into one stderr line and an exit code."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except (InputError, SolverError, StateError) as error:
            _fail(error)
        except KeyboardInterrupt:
            click.echo("error: interrupted", err=True)
            sys.exit(130)

    wrapper.__name__ = func.__name__
    wrapper.__doc__ = func.__doc__
    return wrapper


def parse_now(value: str | None) -> Any:
    if value is None:
        return None
    if re.fullmatch(r"-?\d+", value):
        return int(value)
    try:
        return float(value)
    except ValueError:
        return value


def context_from_flags(
    now: str | None,
    tenant: str | None,
    session: str | None,
    query: str | None,
    budget: int | None,
    max_records: int | None,
    current_version: tuple[str, ...],
) -> Context:
    versions: dict[str, str] = {}
    single = None
    for item in current_version:
        if "=" in item:
            doc, _, version = item.partition("=")
            if not doc or not version:
                raise InputError(f"--current-version expects DOC=VERSION or VERSION, got `{item}`")
            if versions.get(doc, version) != version:
                raise InputError(f"--current-version gives two versions for `{doc}`")
            versions[doc] = version
        else:
            if single is not None and single != item:
                raise InputError(f"--current-version gives two default versions: `{single}` and `{item}`")
            single = item
    return Context(
        now=parse_now(now), tenant=tenant, session=session, query=query, budget=budget,
        max_records=max_records, current_version=single, current_versions=versions,
    )


def load_inputs(policy_path: str, records_path: str | None) -> tuple[Policy, RecordSet]:
    policy = load_policy(policy_path)
    source = records_path or policy.records
    if source is None:
        raise InputError("no records: pass --records or set `records:` in the policy", policy.locate("records"))
    return policy, load_records(source)


def write_output(text: str, out: str | None, force: bool) -> None:
    """Print, or write ``out`` atomically (temp file + rename); never overwrite silently."""
    if out is None:
        click.echo(text, nl=False)
        return
    target = Path(out)
    if target.exists() and not force:
        raise InputError("file exists; pass --force to replace it", Location(out))
    directory = target.parent if str(target.parent) else Path(".")
    if not directory.is_dir():
        raise InputError("folder does not exist", Location(str(directory)))
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def context_options(func: Callable[..., Any]) -> Callable[..., Any]:
    options = [
        click.option("--policy", "policy_path", required=True, type=click.Path(dir_okay=False),
                     help="Policy YAML file."),
        click.option("--records", "records_path", type=click.Path(dir_okay=False),
                     help="Records file (.json, .jsonl, .yaml); default: the policy's `records:`."),
        click.option("--now", help="Current time: a number, or an RFC 3339 time."),
        click.option("--tenant", help="Tenant whose context is being built."),
        click.option("--session", help="Current session id."),
        click.option("--query", help="Query for relevance scoring."),
        click.option("--budget", type=click.IntRange(min=0), help="Token budget B."),
        click.option("--max-records", type=click.IntRange(min=0), help="Most records to select."),
        click.option("--current-version", multiple=True, metavar="DOC=V",
                     help="Current version of a document (repeatable); a bare V is the default version."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


@click.group(cls=_DefaultSolve, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="memsolve")
def main() -> None:
    """Decide which memories enter an agent's context window, at which fidelity, and why.

    `memsolve --policy P` is short for `memsolve solve --policy P`.
    """


@main.command()
@context_options
@click.option("--engine", type=click.Choice(["cp-sat", "dp", "greedy"]), help="Override the policy's engine.")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.option("--out", type=click.Path(dir_okay=False), help="Write the result here (atomically).")
@click.option("--force", is_flag=True, help="Replace --out if it exists.")
@click.option("--strict", is_flag=True, help="Exit 3 unless the optimum is proven.")
@click.option("--timings", is_flag=True, help="Print stage timings to stderr.")
@guarded
def solve(policy_path, records_path, now, tenant, session, query, budget, max_records, current_version,
          engine, fmt, out, force, strict, timings) -> None:
    """Solve one round and print the result."""
    started = time.perf_counter()
    context = context_from_flags(now, tenant, session, query, budget, max_records, current_version)
    policy, records = load_inputs(policy_path, records_path)
    loaded = time.perf_counter()
    result = api.solve(policy, records, context, engine=engine)
    solved = time.perf_counter()
    if fmt == "json":
        text = result.to_json()
    else:
        text = _capture(lambda f: result_table(result, f))
    write_output(text, out, force)
    if timings:
        click.echo(
            f"timings: load {1000 * (loaded - started):.1f} ms, solve {1000 * (solved - loaded):.1f} ms, "
            f"render {1000 * (time.perf_counter() - solved):.1f} ms",
            err=True,
        )
    if strict and result.solver.status != "optimal" and result.solver.engine != "greedy":
        raise SolverError(f"not proven optimal ({result.solver.status}) and --strict was given")


@main.command()
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


@main.command()
@context_options
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.option("--plot", type=click.Path(dir_okay=False), help="Also draw the step curve (.svg or .png).")
@click.option("--force", is_flag=True, help="Replace --plot if it exists.")
@guarded
def frontier(policy_path, records_path, now, tenant, session, query, budget, max_records, current_version,
             fmt, plot, force) -> None:
    """Best objective at every budget 0..B, as the breakpoints of the step curve."""
    context = context_from_flags(now, tenant, session, query, budget, max_records, current_version)
    policy, records = load_inputs(policy_path, records_path)
    points = api.frontier(policy, records, context)
    if plot:
        from ..plot import plot_frontier

        plot_frontier(points, plot, force=force, title=policy.name)
    if fmt == "json":
        payload = {"frontier": [{"budget": b, "objective": v} for b, v in points]}
        click.echo(json.dumps(payload, indent=2))
    else:
        frontier_table(points)


def _capture(render: Callable[[Any], None]) -> str:
    buffer = io.StringIO()
    render(buffer)
    return buffer.getvalue()
