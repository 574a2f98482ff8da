"""The ``memsolve`` command: a thin layer over the library, one module per command group.

Exit codes: 0 ok · 1 audit/test failure · 2 usage or input error · 3 solver error.
Errors print one line to stderr (``error: file:line:column: path: message``), no traceback.
"""

from __future__ import annotations

import click

from . import ci, rounds, solving


class _DefaultSolve(click.Group):
    """``memsolve --policy P`` means ``memsolve solve --policy P``."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0].startswith("-") and args[0] not in ("--help", "-h", "--version"):
            args = ["solve", *args]
        return super().parse_args(ctx, args)


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
