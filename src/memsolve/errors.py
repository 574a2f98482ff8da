"""The memsolve exception family.

    MemsolveError
     ├── InputError     bad policy, records or context; carries file, line, column, path
     ├── SolverError    an engine failed, or two exact engines disagree
     └── StateError     the state store is unreadable, foreign or locked

The library raises these and never prints or exits; the CLI maps them to exit codes
(InputError and StateError → 2, SolverError → 3).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass


class MemsolveError(Exception):
    """Base class of every error memsolve raises on purpose."""


@dataclass(frozen=True)
class Location:
    """Where in an input something is: file, 1-based line and column, JSON-style path."""

    file: str | None = None
    line: int | None = None
    column: int | None = None
    path: str = ""

    def render(self) -> str:
        where = self.file or "<input>"
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        return where


class InputError(MemsolveError):
    """A policy, records file, command-line value or state input is invalid.

    Rendered on one line as ``file:line:column: path: message``.
    """

    def __init__(self, message: str, location: Location | None = None) -> None:
        # one line always: messages quoted from parsers may span several
        self.message = " ".join(message.split())
        self.location = location or Location()
        super().__init__(self.render())

    @property
    def file(self) -> str | None:
        return self.location.file

    @property
    def line(self) -> int | None:
        return self.location.line

    @property
    def column(self) -> int | None:
        return self.location.column

    @property
    def path(self) -> str:
        return self.location.path

    def render(self) -> str:
        parts = [self.location.render()]
        if self.location.path:
            parts.append(self.location.path)
        parts.append(self.message)
        return ": ".join(parts)


class SolverError(MemsolveError):
    """An engine failed, or the exact engines disagree beyond the scaling tolerance."""


class StateError(MemsolveError):
    """The state store cannot be read or written safely."""


def unknown(value: object, options: Iterable[str], what: str) -> str:
    """``unknown WHAT `value``` and a "did you mean" hint, or the options when none is close."""
    options = list(options)
    text = str(value)  # YAML keys may be null or numbers
    # a name far longer than any option is like none of them (and difflib's time grows with it)
    close = len(text) <= 2 * max(map(len, options), default=0) + 10
    hint: list[str] = []
    if close:
        import difflib  # imported by the error that needs it (its import compiles a pattern)

        hint = difflib.get_close_matches(text, options, n=1) or difflib.get_close_matches(
            text.replace("-", "_"), options, n=1
        )
    message = f"unknown {what} `{shown(text)}`"
    if hint:
        return message + f"; did you mean `{hint[0]}`?"
    return message + f"; expected one of {', '.join(f'`{o}`' for o in options)}"


def shown(value: object, limit: int = 40) -> str:
    """A user value for a message, cut to ``limit`` characters: errors never echo more of a file."""
    text = str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def not_finite(value: float) -> str:
    """The message for a NaN or an infinity (or an integer too large to be a count or a time)."""
    if isinstance(value, float) and math.isnan(value):
        return f"expected a finite number, got `{value}`"
    return f"expected a finite number of magnitude at most 2**63, got `{value}`"
