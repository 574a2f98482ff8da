"""The CI half on the command line: ``audit``, ``explain``, ``test``, ``diff``, ``check``, ``compare``."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator

import click

from .. import __version__, pipeline
from ..ci import audit as auditing
from ..ci.findings import FORMATS, Finding, failed, render, stopped
from ..context import Context
from ..errors import InputError, MemsolveError, SolverError
from ..policies.load import load_policy
from ..records import load_records
from ..render import RESULT_FORMATS, capture, comparison_table, diff_tables
from .common import (
    EXIT_FAILED,
    EXIT_OK,
    Inputs,
    check_outputs,
    context_options,
    format_option,
    guarded,
    out_options,
    write_output,
)


def _emit(findings: list[Finding], fmt: str, summary: str, out: str | None, force: bool,
          reports: tuple[tuple[str, str], ...] = ()) -> None:
    for extra, path in reports:  # the files first: a CI log shows the printed report last
        write_output(render(findings, extra, __version__, summary), path, force)
    write_output(render(findings, fmt, __version__, summary), out, force)


@contextlib.contextmanager
def _stop_reported(suite: str, fmt: str, force: bool, reports: tuple[tuple[str, str], ...]) -> Iterator[None]:
    """An error that stops the command is still in its reports: each --report file holds it as one
    failed finding at the error's file and line, and a github log annotates it. The annotation goes
    to stderr, where GitHub reads it too: on an input error stdout stays empty. The error line and
    the exit status (2, or 3 for a solver) stay the guard's."""
    try:
        yield
    except MemsolveError as error:
        findings = [stopped(suite, error)]
        summary = f"{suite}: stopped by an error (exit {3 if isinstance(error, SolverError) else 2})"
        for extra, path in reports:
            try:
                write_output(render(findings, extra, __version__, summary), path, force)
            except InputError:
                pass  # e.g. an existing file without --force: the error itself is still printed, and fails the run
        if fmt == "github":
            click.echo(render(findings, fmt, __version__), err=True, nl=False)
        raise


def _report(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    out = []
    for value in values:
        fmt, sep, path = value.partition("=")
        if not sep or fmt not in FORMATS or not path:
            raise click.BadParameter(f"expected FORMAT=FILE with FORMAT one of {', '.join(FORMATS)}, got `{value}`")
        out.append((fmt, path))
    return tuple(out)


report_option = click.option(
    "--report", "reports", multiple=True, metavar="FORMAT=FILE", callback=_report,
    help="Also write the findings in another format to a file (repeatable), e.g. sarif=memsolve.sarif: "
         "one run for the log, SARIF and JUnit. An error that stops the command is written there too.")


def _report_files(reports: tuple[tuple[str, str], ...]) -> dict[str, str]:
    return {f"--report {fmt}={path}": path for fmt, path in reports}


@click.command()
@context_options
@click.option("--baseline", type=click.Path(dir_okay=False), help="Stored outcomes to compare with.")
@click.option("--write-baseline", type=click.Path(dir_okay=False), help="Store this run's outcomes as the baseline.")
@format_option(FORMATS)
@click.option("--out", type=click.Path(dir_okay=False), help="Write the report here.")
@click.option("--force", is_flag=True, help="Replace --write-baseline, --out or a --report file if it exists.")
@report_option
@guarded
def audit(inputs: Inputs, context: Context, baseline, write_baseline, fmt, out, force, reports) -> None:
    """Compare outcomes with a baseline (exit 1 on any change) and check the invariants."""
    if baseline is None and write_baseline is None:
        raise InputError("give --baseline FILE to compare, or --write-baseline FILE to store one")
    check_outputs({"--out": out, "--write-baseline": write_baseline, **_report_files(reports)},
                  [("--baseline", baseline), *inputs.files()])
    with _stop_reported("audit", fmt, force, reports):
        policy, records = inputs.load()
        result = pipeline.solve(policy, records, context)
        if write_baseline:
            write_output(auditing.dumps(auditing.baseline(result)), write_baseline, force)
        stored = None if baseline is None else auditing.load_baseline(baseline)
        report = auditing.audit(policy, records, context, result, stored)
    _emit(report.findings, fmt, report.summary, out, force, reports)
    sys.exit(EXIT_FAILED if report.failed else EXIT_OK)


@click.command()
@click.argument("record_id")
@context_options
@format_option(RESULT_FORMATS)
@guarded
def explain(record_id, inputs: Inputs, context: Context, fmt) -> None:
    """Why a record got its outcome, and what would change it (computed thresholds)."""
    from ..ci.explain import explain as explain_record
    from ..ci.explain import render_text

    policy, records = inputs.load()
    explanation = explain_record(policy, records, record_id, context)
    if fmt == "json":
        click.echo(json.dumps(explanation.to_dict(), indent=2))
    else:
        click.echo(render_text(explanation), nl=False)


@click.command("test")
@click.argument("paths", nargs=-1, required=True)
@format_option(FORMATS)
@out_options
@report_option
@guarded
def test_command(paths, fmt, out, force, reports) -> None:
    """Run policy tests (YAML files of kind PolicyTest, or folders of them)."""
    from ..ci.policytest import find_test_files, run_file, summary

    check_outputs({"--out": out, **_report_files(reports)}, [("a test path", path) for path in paths])
    with _stop_reported("test", fmt, force, reports):
        files = find_test_files(list(paths))
        if not files:
            raise InputError(f"no policy test files under {', '.join(paths)}")
        findings = [finding for path in files for finding in run_file(path)]
    _emit(findings, fmt, summary(findings), out, force, reports)
    sys.exit(EXIT_FAILED if failed(findings) else EXIT_OK)


@click.command()
@click.argument("old_policy", type=click.Path(dir_okay=False))
@click.argument("new_policy", type=click.Path(dir_okay=False))
@click.option("--records", "records_path", type=click.Path(dir_okay=False),
              help="Records both policies run over; default: the first policy's `records:`.")
@format_option(RESULT_FORMATS)
@guarded
def diff(old_policy, new_policy, records_path, fmt) -> None:
    """Two policies over one record set: changed outcomes and a verdict per rule and overall."""
    from ..ci.diff import diff as diff_policies

    old, records = Inputs(old_policy, records_path).load()
    report = diff_policies(old, load_policy(new_policy), records)
    if fmt == "json":
        click.echo(json.dumps(report.to_dict(), indent=2))
    else:
        click.echo(capture(diff_tables, report), nl=False)


@click.command()
@click.argument("policies", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--records", "records_path", type=click.Path(dir_okay=False),
              help="Also lint against these records (else each policy's own `records:`, if any).")
@format_option(FORMATS)
@out_options
@report_option
@guarded
def check(policies, records_path, fmt, out, force, reports) -> None:
    """Schema validation plus semantic lints with stable codes (MS000-MS008); exit 1 on errors."""
    from ..ci.lint import check_policy, summary

    check_outputs({"--out": out, **_report_files(reports)},
                  [("--records", records_path), *(("a policy", path) for path in policies)])
    findings = []
    with _stop_reported("check", fmt, force, reports):
        for path in policies:
            source = records_path
            if source is None:
                try:
                    source = load_policy(path).records
                except InputError:
                    source = None
            findings += check_policy(path, None if source is None else load_records(source))
    _emit(findings, fmt, summary(policies, findings), out, force, reports)
    sys.exit(EXIT_FAILED if failed(findings) else EXIT_OK)


@click.command()
@context_options
@format_option(RESULT_FORMATS)
@guarded
def compare(inputs: Inputs, context: Context, fmt) -> None:
    """Greedy packing against the exact optimum on the same eligible records."""
    from ..ci.compare import compare as compare_engines

    policy, records = inputs.load()
    comparison = compare_engines(policy, records, context)
    if fmt == "json":
        click.echo(json.dumps(comparison.to_dict(), indent=2))
    else:
        click.echo(capture(comparison_table, comparison), nl=False)


COMMANDS = (audit, explain, test_command, diff, check, compare)
