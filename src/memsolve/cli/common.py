"""What every command shares: exit codes, the error guard, input and context options, output.

The context flags are derived from :data:`memsolve.context.CONTEXT_FIELDS` (one flag per field;
``--current-version`` covers both ``current_version`` and ``current_versions``), so the command
line, the records file, the policy and policy tests name the same facts.
"""

from __future__ import annotations

import functools
import gc
import os
import re
import signal
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import click

from .. import collection
from ..context import CONTEXT_FIELDS, Context
from ..errors import InputError, Location, MemsolveError, SolverError, StateError
from ..output import write_text
from ..policies.load import load_policy
from ..policies.model import Policy
from ..records import RecordSet, load_records

EXIT_OK, EXIT_FAILED, EXIT_INPUT, EXIT_SOLVER = 0, 1, 2, 3


def fail(error: MemsolveError) -> None:
    code = EXIT_SOLVER if isinstance(error, SolverError) else EXIT_INPUT
    text = error.render() if isinstance(error, InputError) else str(error)
    click.echo(f"error: {text}", err=True)
    sys.exit(code)


class _Terminated(BaseException):
    """SIGTERM, raised where the process is so that transactions roll back and temp files go."""


def _on_sigterm(signum: int, frame: Any) -> None:
    raise _Terminated()


def _caused_by_termination(error: BaseException) -> bool:
    """Whether ``error`` was raised while a SIGTERM (_Terminated) was unwinding."""
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, _Terminated):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False


def guarded(func: Callable[..., Any]) -> Callable[..., Any]:
    """Turn memsolve errors into one stderr line and an exit code; SIGINT/SIGTERM exit cleanly."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
        try:
            with collection.paused():
                return func(*args, **kwargs)
        except (InputError, SolverError, StateError) as error:
            fail(error)
        except KeyboardInterrupt:
            click.echo("error: interrupted; nothing was written", err=True)
            sys.exit(130)
        except _Terminated:
            click.echo("error: terminated; nothing was written", err=True)
            sys.exit(143)
        except Exception as error:
            if not _caused_by_termination(error):
                raise
            # SIGTERM during an extension module's import: pybind11 (OR-Tools) turns it into an ImportError
            click.echo("error: terminated; nothing was written", err=True)
            sys.exit(143)
        finally:
            signal.signal(signal.SIGTERM, previous)

    return wrapper


def long_running() -> None:
    """A command that serves or works for long (a server, a fleet) collects cycles again: one-shot
    runs have the collector off (``cli.run``, :func:`guarded`), and a server's requests would
    otherwise keep every cycle they leave until it stops. Each run still pauses it for its own
    duration (``pipeline.run``)."""
    gc.enable()


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)  # hard links and links too
    except OSError:  # one of them does not exist (yet)
        return os.path.realpath(a) == os.path.realpath(b)


def check_outputs(outputs: dict[str, str | None], inputs: Iterable[tuple[str, str | None]] = ()) -> None:
    """Refuse an output file that is also an input, or another output, of the same command, even
    with --force: ``--out`` over ``--state`` would replace the stored state with a report."""
    named = [(flag, path) for flag, path in outputs.items() if path]
    others = [(flag, path) for flag, path in inputs if path]
    for i, (flag, path) in enumerate(named):
        for other, other_path in [*named[i + 1:], *others]:
            if _same_file(path, other_path):
                raise InputError(f"{flag} and {other} name the same file; memsolve never writes over its own input "
                                 "or one output over another, even with --force", Location(path))


def write_output(text: str | Sequence[str], out: str | None, force: bool) -> None:
    """Print, or write ``out`` atomically; never overwrite silently. ``text`` may come in pieces
    (a large result's JSON), written one after another."""
    if out is not None:
        write_text(out, text, force=force)
    elif isinstance(text, str):
        click.echo(text, nl=False)
    else:
        for start in range(0, len(text), _PIECES):  # a few thousand pieces an echo
            click.echo("".join(text[start:start + _PIECES]), nl=False)


_PIECES = 4096


def parse_now(value: str | None) -> Any:
    if value is None:
        return None
    if re.fullmatch(r"-?[0-9]+", value):  # ASCII digits only: `٢٠٢٦` is no number
        try:
            return int(value)
        except ValueError:  # past Python's digit limit: no time anyway, refused as one later
            return value
    if not value.isascii():
        return value  # float() would read non-ASCII digits as a number
    try:
        return float(value)
    except ValueError:
        return value


def parse_versions(items: tuple[str, ...]) -> tuple[str | None, dict[str, str]]:
    """``--current-version`` values: DOC=VERSION for one document, a bare VERSION as the default."""
    versions: dict[str, str] = {}
    single = None
    for item in items:
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
    return single, versions


_COUNT = click.IntRange(min=0, max=10**12)
# one flag per Context field (current_versions shares --current-version)
_CONTEXT_FLAGS: dict[str, Callable[[Callable[..., Any]], Callable[..., Any]]] = {
    "now": click.option("--now", help="Current time: a number, or an RFC 3339 time."),
    "tenant": click.option("--tenant", help="Tenant whose context is being built."),
    "session": click.option("--session", help="Current session id."),
    "query": click.option("--query", help="Query for relevance scoring."),
    "budget": click.option("--budget", type=_COUNT, help="Token budget B."),
    "max_records": click.option("--max-records", type=_COUNT, help="Most records to select."),
    "current_version": click.option("--current-version", multiple=True, metavar="DOC=V",
                                    help="Current version of a document (repeatable); a bare V is the default "
                                         "version."),
}
assert set(_CONTEXT_FLAGS) | {"current_versions"} == set(CONTEXT_FIELDS), "a Context field has no flag"


def context_from_flags(flags: dict[str, Any]) -> Context:
    """The Context the flags give (the flags' values are taken out of ``flags``)."""
    values = {name: flags.pop(name) for name in _CONTEXT_FLAGS}
    values["now"] = parse_now(values["now"])
    values["current_version"], values["current_versions"] = parse_versions(values["current_version"])
    return Context(**values)


class Inputs:
    """The policy and records a command names; loaded when the command is ready for them."""

    __slots__ = ("policy_path", "records_path", "overrides")

    def __init__(self, policy_path: str, records_path: str | None, overrides: tuple[str, ...] = ()) -> None:
        self.policy_path, self.records_path, self.overrides = policy_path, records_path, overrides

    def files(self) -> list[tuple[str, str | None]]:
        """The input files, by flag (for :func:`check_outputs`)."""
        return [("--policy", self.policy_path), ("--records", self.records_path)]

    def load(self) -> tuple[Policy, RecordSet]:
        policy = load_policy(self.policy_path, self.overrides)
        source = self.records_path or policy.records
        if source is None:
            raise InputError("no records: pass --records or set `records:` in the policy", policy.locate("records"))
        return policy, load_records(source)


def context_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """--policy, --records, the context flags and --set; the command receives ``inputs`` and
    ``context`` in their place."""

    @functools.wraps(func)
    @guarded  # a bad context flag is one line and exit 2 like every other input error
    def wrapper(**kwargs: Any) -> Any:
        context = context_from_flags(kwargs)
        inputs = Inputs(kwargs.pop("policy_path"), kwargs.pop("records_path"), kwargs.pop("overrides"))
        return func(inputs=inputs, context=context, **kwargs)

    options = [
        click.option("--policy", "policy_path", required=True, type=click.Path(dir_okay=False),
                     help="Policy YAML file."),
        click.option("--records", "records_path", type=click.Path(dir_okay=False),
                     help="Records file (.json, .jsonl, .yaml); default: the policy's `records:`."),
        *_CONTEXT_FLAGS.values(),
        click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
                     help="Edit the policy for this run (repeatable): rules.relevance.recency_weight=1, "
                          "rules.max-age=48 (a rule by the id traces show), budget.tokens=10."),
    ]
    for option in reversed(options):
        wrapper = option(wrapper)
    return wrapper


def format_option(choices: tuple[str, ...]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    return click.option("--format", "fmt", type=click.Choice(list(choices)), default=choices[0], show_default=True)


def out_options(func: Callable[..., Any]) -> Callable[..., Any]:
    func = click.option("--force", is_flag=True, help="Replace --out if it exists.")(func)
    return click.option("--out", type=click.Path(dir_okay=False), help="Write the report here (atomically).")(func)
