"""``batch``: one policy over a fleet of agents on Dask (:mod:`memsolve.fleet.batch`)."""

from __future__ import annotations

import json
import sys

import click

from ..errors import InputError
from ..result import TRACE_MODES
from .common import EXIT_FAILED, EXIT_INPUT, EXIT_OK, check_outputs, format_option, guarded, long_running


@click.command()
@click.option("--policy", "policy_path", required=True, type=click.Path(dir_okay=False), help="Policy YAML file.")
@click.option("--agents", "source", required=True, type=click.Path(),
              help="A folder of records files (one agent each, named by the file), or a JSON Lines file of "
                   '{"agent", "tenant", "records"}.')
@click.option("--out", required=True, type=click.Path(dir_okay=False),
              help="Result lines (JSON Lines), one per agent; agents already in it are skipped (lines of "
                   "another policy, other records or baselines are refused).")
@click.option("--scheduler", default="local", show_default=True,
              help="`local` (a LocalCluster in this process) or an existing scheduler's address (tcp://host:8786).")
@click.option("--workers", type=click.IntRange(min=1, max=1024), help="LocalCluster workers (default: the CPUs, <= 8).")
@click.option("--partition-size", type=click.IntRange(min=1), default=100, show_default=True,
              help="Agents per partition (one task; the unit written to --out at once).")
@click.option("--audit", "baseline_dir", type=click.Path(file_okay=False, exists=True),
              help="A folder of baselines, AGENT.json each (memsolve audit --write-baseline): count changed "
                   "outcomes per rule across the fleet; exit 1 on any.")
@click.option("--trace", "trace_mode", type=click.Choice(list(TRACE_MODES)), default="none", show_default=True,
              help="Trace entries in each result line.")
@click.option("--progress/--no-progress", default=None, help="A progress bar on stderr (default: when a terminal).")
@format_option(("table", "json"))
@guarded
def batch(policy_path, source, out, scheduler, workers, partition_size, baseline_dir, trace_mode, progress,
          fmt) -> None:
    """Solve or audit every agent of a fleet on Dask: one result line per agent, resumable.

    Agents already in --out are skipped (a line of another policy or other records is refused);
    an agent whose input fails is one error line on stderr and the batch goes on (exit 2 at the
    end). The summary counts, over every line in --out, exclusions per rule and, with --audit,
    changed outcomes per rule.
    """
    try:
        import dask  # noqa: F401
        import distributed  # noqa: F401
    except ImportError:
        raise InputError("memsolve batch needs Dask: pip install 'memsolve[dask]'") from None
    from ..fleet.batch import load_agents, run_batch

    check_outputs({"--out": out}, [("--policy", policy_path), ("--agents", source)])
    if scheduler != "local" and workers is not None:
        raise InputError("--workers sizes a LocalCluster; an existing scheduler has its own workers")
    agents = load_agents(source)
    show = sys.stderr.isatty() if progress is None else progress
    bar = _Progress() if show else None

    def on_error(agent: str, message: str) -> None:
        click.echo(f"error: agent `{agent}`: {message}", err=True)

    long_running()
    try:
        summary = run_batch(policy_path, agents, out, scheduler=scheduler, workers=workers,
                            partition_size=partition_size, trace=trace_mode, baseline_dir=baseline_dir,
                            on_error=on_error, on_progress=None if bar is None else bar.update)
    finally:
        if bar is not None:
            bar.stop()
    if fmt == "json":
        click.echo(json.dumps(summary.to_dict(), indent=2))
    else:
        click.echo(_summary_text(summary, out), nl=False)
    if summary.errors:
        sys.exit(EXIT_INPUT)
    sys.exit(EXIT_FAILED if summary.changed_agents else EXIT_OK)


class _Progress:
    """A rich progress bar on stderr, started by the first partition."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self.progress = Progress(TextColumn("agents"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                                 console=Console(stderr=True))
        self.task = None

    def update(self, done: int, total: int) -> None:
        if self.task is None:
            self.progress.start()
            self.task = self.progress.add_task("agents", total=total)
        self.progress.update(self.task, completed=done)

    def stop(self) -> None:
        self.progress.stop()


def _summary_text(summary, out: str) -> str:
    lines = [f"batch: {summary.agents} agents: {summary.solved} solved, {summary.skipped} already in {out}, "
             f"{len(summary.errors)} failed"]
    if summary.exclusions:
        counts = sorted(summary.exclusions.items())
        lines.append("exclusions by rule: " + ", ".join(f"{rule} {n}" for rule, n in counts))
    if summary.audited:
        total = sum(summary.changed_by_rule.values())
        lines.append(f"audit: {total} changed outcome(s) in {len(summary.changed_agents)} agent(s)")
        lines += [f"  {rule}: {n}" for rule, n in sorted(summary.changed_by_rule.items())]
    return "\n".join(lines) + "\n"


COMMANDS = (batch,)
