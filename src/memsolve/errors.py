"""The memsolve exception family.

    MemsolveError
     ├── InputError     bad policy, records or context; carries file, line, column, path
     ├── SolverError    an engine failed, or two exact engines disagree
     └── StateError     the state store is unreadable, foreign or locked

The library raises these and never prints or exits; the CLI maps them to exit codes
(InputError and StateError → 2, SolverError → 3).
"""

from __future__ import annotations

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
