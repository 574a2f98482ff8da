"""The ``memsolve`` command: a thin layer over the library.

Exit codes: 0 ok · 1 audit/test failure · 2 usage or input error · 3 solver error.
Errors print one line to stderr (``error: file:line:column: path: message``), no traceback.
"""

from __future__ import annotations

import gc
import io
import json
import os
import re
import signal
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
from ..render import frontier_table, result_table, rows_table
from ..state import StateStore

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


class _Terminated(BaseException):
    """SIGTERM, raised where the process is so that transactions roll back and temp files go."""


def _on_sigterm(signum: int, frame: Any) -> None:
    raise _Terminated()


def guarded(func: Callable[..., Any]) -> Callable[..., Any]:
    """Turn memsolve errors into one stderr line and an exit code; SIGINT/SIGTERM exit cleanly."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
        # a command allocates tens of thousands of small acyclic objects (records, verdicts,
        # trace entries); the cyclic collector rescanning them cost ~15 % of a 10,000-record
        # round and found next to nothing to reclaim. Reference counting still frees them; the collector's
        # state is restored after the command.
        collecting = gc.isenabled()
        gc.disable()
        try:
            return func(*args, **kwargs)
        except (InputError, SolverError, StateError) as error:
            _fail(error)
        except KeyboardInterrupt:
            click.echo("error: interrupted; nothing was written", err=True)
            sys.exit(130)
        except _Terminated:
            click.echo("error: terminated; nothing was written", err=True)
            sys.exit(143)
        finally:
            signal.signal(signal.SIGTERM, previous)
            if collecting:
                gc.enable()

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


def load_inputs(
    policy_path: str, records_path: str | None, overrides: tuple[str, ...] = ()
) -> tuple[Policy, RecordSet]:
    policy = load_policy(policy_path, overrides)
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
        click.option("--budget", type=click.IntRange(min=0, max=10**12), help="Token budget B."),
        click.option("--max-records", type=click.IntRange(min=0, max=10**12), help="Most records to select."),
        click.option("--current-version", multiple=True, metavar="DOC=V",
                     help="Current version of a document (repeatable); a bare V is the default version."),
        click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
                     help="Edit the policy for this run (repeatable): rules.relevance.recency_weight=1, "
                          "rules.max_age=48, budget.tokens=10."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _engine_build() -> str:
    """Which exact kernel this install runs: the compiled one, or numpy (no C compiler, or switched off)."""
    from ..solver import kernel

    if kernel.enabled():
        return "compiled kernel"
    return "numpy kernel: " + ("MEMSOLVE_KERNEL=numpy" if kernel._kernel is not None else "not compiled at install")


def _print_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from importlib.metadata import version

    click.echo(f"memsolve {version('memsolve')} ({_engine_build()})")
    ctx.exit()


@click.group(cls=_DefaultSolve, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
              help="Show the version and which exact kernel runs, then exit.")
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
@click.option("--state", "state_path", type=click.Path(dir_okay=False),
              help="SQLite state file: pricing queue, fidelity ceilings, history.")
@click.option("--agent", help="Agent whose state this round reads and writes (with --state).")
@click.option("--refresh", is_flag=True, help="Rebuild candidates from the archive: clear ceilings, keep Q and t.")
@click.option("--dry-run", is_flag=True, help="Solve the round but write no state.")
@guarded
def solve(policy_path, records_path, now, tenant, session, query, budget, max_records, current_version,
          overrides, engine, fmt, out, force, strict, timings, state_path, agent, refresh, dry_run) -> None:
    """Solve one round and print the result."""
    started = time.perf_counter()
    context = context_from_flags(now, tenant, session, query, budget, max_records, current_version)
    if (state_path is None) != (agent is None):
        raise InputError("--state and --agent go together")
    if (refresh or dry_run) and state_path is None:
        raise InputError("--refresh and --dry-run need --state and --agent")
    policy, records = load_inputs(policy_path, records_path, overrides)
    loaded = time.perf_counter()
    if state_path is None:
        result = api.solve(policy, records, context, engine=engine)
    else:
        store = StateStore(state_path)
        result = store.round(policy, records, context, agent=agent, refresh=refresh, dry_run=dry_run, engine=engine)
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
             overrides, fmt, plot, force) -> None:
    """Best objective at every budget 0..B, as the breakpoints of the step curve."""
    context = context_from_flags(now, tenant, session, query, budget, max_records, current_version)
    policy, records = load_inputs(policy_path, records_path, overrides)
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


@main.group()
def state() -> None:
    """Operators' tools for the state file: show, reset, export."""


def _state_keys(store: StateStore, agent: str, policy_path: str | None, tenant: str | None) -> list:
    keys = store.keys(agent)
    if policy_path is not None:
        policy = load_policy(policy_path)
        wanted_tenant = tenant if tenant is not None else policy.tenant
        keys = [k for k in keys if k.policy == policy.name and (wanted_tenant is None or k.tenant == wanted_tenant)]
    elif tenant is not None:
        keys = [k for k in keys if k.tenant == tenant]
    return keys


def _state_options(func: Callable[..., Any]) -> Callable[..., Any]:
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
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@guarded
def state_show(state_path, agent, policy_path, tenant, fmt) -> None:
    """Round, queue Q, next price λ, fidelity ceilings and history of an agent."""
    store = StateStore(state_path)
    if not Path(state_path).exists():
        raise StateError(f"{state_path}: no such state file")
    keys = _state_keys(store, agent, policy_path, tenant)
    states = [store.load(key) for key in keys]
    policy = load_policy(policy_path) if policy_path else None
    if fmt == "json":
        payload = []
        for s in states:
            data = s.to_dict()
            if policy is not None:
                queue = policy.pricing.q0 if s.queue is None else s.queue
                data["next_lambda"] = api.price_for(policy, s.round, queue).lam
            payload.append(data)
        click.echo(json.dumps({"agents": payload}, indent=2))
        return
    if not states:
        click.echo(f"no state for agent `{agent}` in {state_path}")
        return
    for s in states:
        line = (f"policy {s.key.policy}  tenant {s.key.tenant or '-'}  agent {s.key.agent}  "
                f"next round {s.round}  Q {s.queue}")
        if policy is not None:
            queue = policy.pricing.q0 if s.queue is None else s.queue
            line += f"  next lambda {api.price_for(policy, s.round, queue).lam:.6g}"
        click.echo(line)
        rows_table("Fidelity ceilings", ["record", "ceiling", "since round"],
                   [(rid, c.level, c.round) for rid, c in sorted(s.ceilings.items())])
        rows_table("History", ["round", "Q before", "lambda", "tokens", "occupancy", "objective", "Q after", "refresh"],
                   [(h.round, f"{h.queue_before:.4g}", f"{h.lam:.4g}", f"{h.tokens_used}/{h.budget}",
                     f"{h.occupancy:.3f}", f"{h.objective:.6g}", f"{h.queue_after:.4g}", "yes" if h.refresh else "")
                    for h in s.history])


@state.command("reset")
@_state_options
@click.option("--yes", is_flag=True, help="Confirm: forget round, queue, ceilings and history.")
@guarded
def state_reset(state_path, agent, policy_path, tenant, yes) -> None:
    """Forget an agent's state (all its policies, or --policy's)."""
    if not yes:
        raise InputError("reset forgets the pricing queue, ceilings and history; pass --yes to confirm")
    if not Path(state_path).exists():
        raise StateError(f"{state_path}: no such state file")
    store = StateStore(state_path)
    keys = _state_keys(store, agent, policy_path, tenant)
    for key in keys:
        store.reset(key)
        click.echo(f"reset: policy {key.policy}, tenant {key.tenant or '-'}, agent {key.agent}")
    if not keys:
        click.echo(f"nothing stored for agent `{agent}`")


@state.command("export")
@click.option("--state", "state_path", required=True, type=click.Path(dir_okay=False), help="State file.")
@click.option("--agent", help="Only this agent.")
@click.option("--out", type=click.Path(dir_okay=False), help="Write here (atomically) instead of stdout.")
@click.option("--force", is_flag=True, help="Replace --out if it exists.")
@guarded
def state_export(state_path, agent, out, force) -> None:
    """Every stored key as JSON."""
    if not Path(state_path).exists():
        raise StateError(f"{state_path}: no such state file")
    write_output(json.dumps(StateStore(state_path).export(agent), indent=2) + "\n", out, force)


@main.command()
@click.option("--policy", "policy_path", required=True, type=click.Path(dir_okay=False), help="Policy YAML file.")
@click.option("--rounds-file", "rounds_files", required=True, multiple=True, type=click.Path(dir_okay=False),
              help="JSON Lines, one record batch per round (repeatable; files run in order).")
@click.option("--agent", default="simulation", show_default=True)
@click.option("--format", "fmt", type=click.Choice(["table", "json", "csv"]), default="table", show_default=True)
@click.option("--out", type=click.Path(dir_okay=False), help="Write the trajectory here (.json or .csv).")
@click.option("--plot", type=click.Path(dir_okay=False), help="Plot occupancy against alpha, and lambda (.svg/.png).")
@click.option("--force", is_flag=True, help="Replace --out and --plot if they exist.")
@guarded
def simulate(policy_path, rounds_files, agent, fmt, out, plot, force) -> None:
    """Run many rounds through the pricing queue (the same code path as --state) and report the trajectory."""
    from ..simulate import load_rounds, run_simulation, trajectory_csv

    policy = load_policy(policy_path)
    batches = [batch for path in rounds_files for batch in load_rounds(path)]
    rows = run_simulation(policy, batches, agent=agent)
    payload = json.dumps({"policy": policy.name, "alpha": policy.pricing.alpha,
                          "trajectory": [r.to_dict() for r in rows]}, indent=2) + "\n"
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
        rows_table(f"Simulation: {policy.name} (alpha {policy.pricing.alpha:g})",
                   ["t", "Q", "lambda", "tokens", "occupancy", "objective", "levels"],
                   [(r.round, f"{r.queue:.4g}", f"{r.lam:.4g}", f"{r.tokens_used}/{r.budget}",
                     f"{r.occupancy:.3f}", f"{r.objective:.6g}",
                     " ".join(f"{k}={v}" for k, v in sorted(r.levels.items())))
                    for r in rows])


def _emit_findings(findings, fmt: str, summary: str, out: str | None, force: bool) -> None:
    from .. import __version__
    from ..findings import render

    if fmt == "table":
        rows = [(f.suite, f.name, "pass" if f.passed else f.level.upper(), f.code, f.message,
                 f.location.render() if f.location else "") for f in findings if not f.passed]
        text = _capture(lambda handle: rows_table("Findings", ["suite", "case", "result", "code", "message", "where"],
                                                  rows, handle)) if rows else ""
        write_output(text + summary + "\n", out, force)
    else:
        write_output(render(findings, fmt, __version__, summary), out, force)


FORMAT_OPTION = click.option("--format", "fmt", type=click.Choice(["table", "json", "junit", "sarif", "github"]),
                             default="table", show_default=True)


@main.command()
@context_options
@click.option("--baseline", type=click.Path(dir_okay=False), help="Stored outcomes to compare with.")
@click.option("--write-baseline", type=click.Path(dir_okay=False), help="Store this run's outcomes as the baseline.")
@FORMAT_OPTION
@click.option("--out", type=click.Path(dir_okay=False), help="Write the report here.")
@click.option("--force", is_flag=True, help="Replace --write-baseline or --out if it exists.")
@guarded
def audit(policy_path, records_path, now, tenant, session, query, budget, max_records, current_version,
          overrides, baseline, write_baseline, fmt, out, force) -> None:
    """Compare outcomes with a baseline (exit 1 on any change) and check the invariants."""
    from .. import audit as auditing

    if baseline is None and write_baseline is None:
        raise InputError("give --baseline FILE to compare, or --write-baseline FILE to store one")
    context = context_from_flags(now, tenant, session, query, budget, max_records, current_version)
    policy, records = load_inputs(policy_path, records_path, overrides)
    result = api.solve(policy, records, context)
    findings = auditing.invariants(policy, records, context, result)
    if write_baseline:
        write_output(auditing.dumps(auditing.baseline(result)), write_baseline, force)
    if baseline:
        findings = auditing.compare(policy, auditing.load_baseline(baseline), result) + findings
    bad = [f for f in findings if not f.passed]
    changed = sum(1 for f in bad if f.suite == "audit")
    broken = sum(1 for f in bad if f.suite == "invariants")
    summary = f"audit: {changed} changed outcome(s), {broken} invariant violation(s)"
    _emit_findings(findings, fmt, summary, out, force)
    sys.exit(EXIT_FAILED if bad else EXIT_OK)


@main.command()
@click.argument("record_id")
@context_options
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@guarded
def explain(record_id, policy_path, records_path, now, tenant, session, query, budget, max_records,
            current_version, overrides, fmt) -> None:
    """Why a record got its outcome, and what would change it (computed thresholds)."""
    from ..explain import explain as explain_record
    from ..explain import render_text

    context = context_from_flags(now, tenant, session, query, budget, max_records, current_version)
    policy, records = load_inputs(policy_path, records_path, overrides)
    explanation = explain_record(policy, records, record_id, context)
    if fmt == "json":
        click.echo(json.dumps(explanation.to_dict(), indent=2))
    else:
        click.echo(render_text(explanation), nl=False)


@main.command("test")
@click.argument("paths", nargs=-1, required=True)
@FORMAT_OPTION
@click.option("--out", type=click.Path(dir_okay=False), help="Write the report here.")
@click.option("--force", is_flag=True, help="Replace --out if it exists.")
@guarded
def test_command(paths, fmt, out, force) -> None:
    """Run policy tests (YAML files of kind PolicyTest, or folders of them)."""
    from ..policytest import find_test_files, run_file

    files = find_test_files(list(paths))
    if not files:
        raise InputError(f"no policy test files under {', '.join(paths)}")
    findings = [finding for path in files for finding in run_file(path)]
    passed = sum(1 for f in findings if f.passed)
    summary = f"{passed} passed, {len(findings) - passed} failed"
    _emit_findings(findings, fmt, summary, out, force)
    sys.exit(EXIT_OK if passed == len(findings) else EXIT_FAILED)


@main.command()
@click.argument("old_policy", type=click.Path(dir_okay=False))
@click.argument("new_policy", type=click.Path(dir_okay=False))
@click.option("--records", "records_path", type=click.Path(dir_okay=False),
              help="Records both policies run over; default: the first policy's `records:`.")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@guarded
def diff(old_policy, new_policy, records_path, fmt) -> None:
    """Two policies over one record set: changed outcomes and a verdict per rule and overall."""
    from ..diff import diff as diff_policies

    old, records = load_inputs(old_policy, records_path)
    new = load_policy(new_policy)
    report = diff_policies(old, new, records)
    if fmt == "json":
        click.echo(json.dumps(report.to_dict(), indent=2))
        return
    from ..audit import _describe

    rows_table("Changed outcomes", ["record", "before", "after"],
               [(c["id"], _describe(c["before"]), _describe(c["after"])) for c in report.changes])
    rows_table("Rules", ["rule", "verdict"], sorted(report.rules.items()))
    click.echo(f"overall: {report.overall}")


@main.command()
@click.argument("policies", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--records", "records_path", type=click.Path(dir_okay=False),
              help="Also lint against these records (else each policy's own `records:`, if any).")
@FORMAT_OPTION
@click.option("--out", type=click.Path(dir_okay=False), help="Write the report here.")
@click.option("--force", is_flag=True, help="Replace --out if it exists.")
@guarded
def check(policies, records_path, fmt, out, force) -> None:
    """Schema validation plus semantic lints with stable codes (MS000-MS008); exit 1 on errors."""
    from ..findings import failed
    from ..lint import check_policy

    findings = []
    for path in policies:
        records = None
        source = records_path
        if source is None:
            try:
                source = load_policy(path).records
            except InputError:
                source = None
        if source is not None:
            records = load_records(source)
        findings += check_policy(path, records)
    errors = failed(findings)
    warnings = [f for f in findings if not f.passed and f.level == "warning"]
    notes = [f for f in findings if not f.passed and f.level == "note"]
    summary = (f"check: {len(policies)} polic{'y' if len(policies) == 1 else 'ies'}, {len(errors)} error(s), "
               f"{len(warnings)} warning(s), {len(notes)} note(s)")
    _emit_findings(findings, fmt, summary, out, force)
    sys.exit(EXIT_FAILED if errors else EXIT_OK)


@main.command()
@context_options
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@guarded
def compare(policy_path, records_path, now, tenant, session, query, budget, max_records, current_version,
            overrides, fmt) -> None:
    """Greedy packing against the exact optimum on the same eligible records."""
    context = context_from_flags(now, tenant, session, query, budget, max_records, current_version)
    policy, records = load_inputs(policy_path, records_path, overrides)
    exact = api.solve(policy, records, context)
    greedy = api.solve(policy, records, context, engine="greedy")
    picks = {"exact": {s.id: s for s in exact.selected}, "greedy": {s.id: s for s in greedy.selected}}
    ids = [t.id for t in exact.trace if t.id in picks["exact"] or t.id in picks["greedy"]]
    differ = [rid for rid in ids if (picks["exact"].get(rid) and picks["exact"][rid].level)
              != (picks["greedy"].get(rid) and picks["greedy"][rid].level)]
    summary = {
        "exact": {"objective": exact.objective, "utility": exact.utility, "tokens_used": exact.tokens_used,
                  "selected": [s.to_dict() for s in exact.selected]},
        "greedy": {"objective": greedy.objective, "utility": greedy.utility, "tokens_used": greedy.tokens_used,
                   "selected": [s.to_dict() for s in greedy.selected]},
        "greedy_loses": exact.objective - greedy.objective,
        "differ": differ,
    }
    if fmt == "json":
        click.echo(json.dumps(summary, indent=2))
        return

    def cell(name: str, rid: str) -> str:
        chosen = picks[name].get(rid)
        return "-" if chosen is None else f"{chosen.level} ({chosen.tokens})"

    rows_table("Greedy vs exact", ["record", "exact", "greedy", ""],
               [(rid, cell("exact", rid), cell("greedy", rid), "differs" if rid in differ else "") for rid in ids])
    click.echo(f"exact:  objective {exact.objective:.6g}, utility {exact.utility:.6g}, {exact.tokens_used} tokens")
    click.echo(f"greedy: objective {greedy.objective:.6g}, utility {greedy.utility:.6g}, {greedy.tokens_used} tokens")
    click.echo(f"greedy loses {exact.objective - greedy.objective:.6g}")
