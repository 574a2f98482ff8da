"""The ``memsolve`` command: a thin layer over the library, one module per command group.

Exit codes: 0 ok · 1 audit/test failure · 2 usage or input error · 3 solver error.
Errors print one line to stderr (``error: file:line:column: path: message``), no traceback;
so do usage errors (an unknown option, a bad option value, a folder where a file goes), which
click would print as a usage block.

Each command's module is imported when that command runs (or shows its own help), not before:
``memsolve --version`` and ``memsolve --help`` import none of them, so none of the pipeline,
numpy or jsonschema (:class:`_Lazy`).
"""

from __future__ import annotations

import atexit
import gc
import importlib
import importlib.machinery
import importlib.util
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

import click

# every command: its name, the module of this package and the attribute that define it, and the
# first paragraph of its help, which is what `memsolve --help` lists (without importing the module;
# tests/cli/test_imports.py holds each to the command's own docstring)
_COMMANDS: dict[str, tuple[str, str, str]] = {
    "solve": ("solving", "solve", "Solve one round and print the result."),
    "validate": ("solving", "validate",
                 "Check policies against the schema and the semantic rules; exit 2 if any fails."),
    "frontier": ("solving", "frontier",
                 "Best objective at every budget 0..B, as the breakpoints of the step curve."),
    "audit": ("ci", "audit",
              "Compare outcomes with a baseline (exit 1 on any change) and check the invariants."),
    "explain": ("ci", "explain", "Why a record got its outcome, and what would change it (computed thresholds)."),
    "test": ("ci", "test_command", "Run policy tests (YAML files of kind PolicyTest, or folders of them)."),
    "diff": ("ci", "diff", "Two policies over one record set: changed outcomes and a verdict per rule and overall."),
    "check": ("ci", "check",
              "Schema validation plus semantic lints with stable codes (MS000-MS008); exit 1 on errors."),
    "compare": ("ci", "compare", "Greedy packing against the exact optimum on the same eligible records."),
    "state": ("rounds", "state", "Operators' tools for the state file: show, reset, export, import."),
    "batch": ("batch", "batch", "Solve or audit every agent of a fleet on Dask: one result line per agent, resumable."),
    "simulate": ("rounds", "simulate",
                 "Run many rounds through the pricing queue (the same code path as --state) and report the "
                 "trajectory."),
    "import": ("importing", "import_records", "Records (JSON Lines) from a mem0, LangGraph, Letta or Graphiti export."),
    "mcp": ("serving", "mcp", "A Model Context Protocol server over stdio: select_context and explain for an agent."),
    "calibrate": ("calibrating", "calibrate",
                  "Fit the utility model on labelled queries and write the policy with it."),
    "workbench": ("workbench", "workbench",
                  "Serve the retrieval workbench: a local page over the real engine (the `workbench` extra)."),
}
_LISTING = "memsolve.listing"  # set in ctx.meta while the group lists its commands (help, completion)


class _UsageLine(click.UsageError):
    """A usage error shown as memsolve shows every error: one line, ``error: message``, exit 2."""

    def show(self, file: Any = None) -> None:
        click.echo(f"error: {self.format_message()}", file=file, err=file is None)


@contextmanager
def _one_line() -> Iterator[None]:
    try:
        yield
    except click.exceptions.NoArgsIsHelpError:
        raise  # `memsolve` or `memsolve state` alone: the help text, as before
    except _UsageLine:
        raise
    except click.UsageError as exc:
        raise _UsageLine(" ".join(exc.format_message().split()), exc.ctx) from None


class _Lazy(click.Group):
    """A group that imports a command's module on first use (click's "lazily loading
    subcommands" pattern). Listing the commands (``--help``, shell completion) imports none: a
    command not loaded yet is listed by a stand-in with its name and the first paragraph of its
    help, which is all a listing shows of it."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*_COMMANDS, *self.commands})  # sorted, as click lists a group's commands

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = self.commands.get(cmd_name)
        if command is not None or cmd_name not in _COMMANDS:
            return command
        module, attribute, summary = _COMMANDS[cmd_name]
        if ctx.meta.get(_LISTING):
            return click.Command(cmd_name, help=summary)
        command = getattr(importlib.import_module(f"{__name__}.{module}"), attribute)
        self.add_command(command, cmd_name)
        return command

    def resolve_command(self, ctx: click.Context,
                        args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as exc:
            # click's "Did you mean" picks from the commands loaded so far; pick from every command
            name = getattr(exc, "command_name", None)  # click >= 8.4: NoSuchCommand
            if name is None:
                raise
            raise type(exc)(name, possibilities=self.list_commands(ctx), ctx=ctx) from None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with _listing(ctx):
            super().format_commands(ctx, formatter)

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[Any]:
        with _listing(ctx):
            return super().shell_complete(ctx, incomplete)


@contextmanager
def _listing(ctx: click.Context) -> Iterator[None]:
    ctx.meta[_LISTING] = True
    try:
        yield
    finally:
        del ctx.meta[_LISTING]


class _DefaultSolve(_Lazy):
    """``memsolve --policy P`` means ``memsolve solve --policy P``; usage errors of this group
    and of every command under it are one line (:class:`_UsageLine`)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0].startswith("-") and args[0] not in ("--help", "-h", "--version"):
            args = ["solve", *args]
        return super().parse_args(ctx, args)

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:
        with _one_line():
            return super().make_context(info_name, args, parent, **extra)

    def invoke(self, ctx: click.Context) -> Any:
        # the commands' own parsing (and the `state` group's) happens inside this call
        with _one_line():
            return super().invoke(ctx)


def _print_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from .. import __version__  # the one place the version is written (importlib.metadata costs 0.1 s)

    click.echo(f"memsolve {__version__} ({_kernel()})")
    ctx.exit()


def _kernel() -> str:
    """:func:`memsolve.solver.native.describe`, without importing :mod:`memsolve.solver` (numpy
    and the engines, several times the rest of ``--version``) when nothing has imported it yet:
    the same three answers, from the compiled module that package would import."""
    if "memsolve.solver" in sys.modules:
        from ..solver import native

        return native.describe()
    folder = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "solver")
    spec = importlib.machinery.PathFinder.find_spec("_kernel", [folder])
    built = False
    if spec is not None:
        try:
            importlib.util.module_from_spec(spec)  # loads it, as `from . import _kernel` would; not kept
            built = True
        except ImportError:
            pass
    if built and os.environ.get("MEMSOLVE_KERNEL", "").lower() != "numpy":
        return "compiled kernel"
    return "numpy kernel: " + ("MEMSOLVE_KERNEL=numpy" if built else "not compiled at install")


@click.group(cls=_DefaultSolve, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
              help="Show the version and which exact kernel runs, then exit.")
def main() -> None:
    """Decide which memories enter an agent's context window, at which fidelity, and why.

    `memsolve --policy P` is short for `memsolve solve --policy P`.
    """


_BLAS_THREADS = frozenset(("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"))


def run() -> NoReturn:
    """The ``memsolve`` process (``python -m memsolve`` and the installed command): :func:`main`,
    then out of the process at once, its exit handlers run and its streams flushed first.

    A normal exit frees every object on the heap one by one and tears numpy's modules down:
    30-100 ms of a 10,000-record round, spent after the output is written (mypy leaves the same
    way). Where a thread is still running or a stream cannot be flushed, the interpreter exits
    as it always did. ``main`` itself stays an ordinary click command (tests call it in-process).

    The cyclic collector is off for the process, as :func:`guarded` has it for a command's run:
    what a command imports and makes lives until the exit, and rescanning it (after the command
    modules' imports, and once more over the whole round when a command's pause ended) was 4% of a
    10,000-record round. A server that runs for hours turns it back on (``memsolve workbench``).

    OpenBLAS runs one thread unless the environment says otherwise (``OPENBLAS_NUM_THREADS``,
    ``GOTO_NUM_THREADS`` or ``OMP_NUM_THREADS``): memsolve's products are a few features wide,
    and starting a pool of BLAS threads was a third of numpy's import (50 ms of wall time on two
    cores). One thread also sums every product in one order, whatever the machine's cores (Dask
    gives its workers the same setting).
    """
    if not _BLAS_THREADS.intersection(os.environ):
        os.environ["OPENBLAS_NUM_THREADS"] = "1"  # before numpy loads OpenBLAS: it reads this then
    gc.disable()
    try:
        main()
        code: Any = 0
    except SystemExit as exc:
        code = exc.code
    if code is None:
        code = 0
    elif not isinstance(code, int):  # sys.exit("message"): printed, status 1, as the interpreter does
        print(code, file=sys.stderr)
        code = 1
    if threading.active_count() > 1:
        raise SystemExit(code)
    try:
        atexit._run_exitfuncs()  # what the interpreter runs at exit (and then forgets: never twice)
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:  # a closed pipe: the interpreter's own exit reports it, as before
        raise SystemExit(code) from None
    os._exit(code)
