"""The ``memsolve`` command: a thin layer over the library, one module per command group.

Exit codes: 0 ok · 1 audit/test failure · 2 usage or input error · 3 solver error.
Errors print one line to stderr (``error: file:line:column: path: message``), no traceback;
so do usage errors (an unknown option, a bad option value, a folder where a file goes), which
click would print as a usage block.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from . import ci, rounds, solving


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


class _DefaultSolve(click.Group):
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
    from importlib.metadata import version

    from ..solver import native

    click.echo(f"memsolve {version('memsolve')} ({native.describe()})")
    ctx.exit()


@click.group(cls=_DefaultSolve, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
              help="Show the version and which exact kernel runs, then exit.")
def main() -> None:
    """Decide which memories enter an agent's context window, at which fidelity, and why.

    `memsolve --policy P` is short for `memsolve solve --policy P`.
    """


for group in (solving, ci, rounds):
    for command in group.COMMANDS:
        main.add_command(command)
