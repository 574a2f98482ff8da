"""A record's level: one fidelity it can be kept at, with its size and utility.

A msgspec Struct rather than a tuple or a dataclass because the loader's fast path
(:mod:`memsolve.decode`) decodes a record's ``representations`` straight into levels: a million
records hold four million of them, and building each one again in Python cost more than the rest
of the load. The decoder cannot know a level's name (the key it is written under), so the name
is set once on the decoded level (:func:`named_levels`) before anyone else sees it.
"""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import Meta
from msgspec.structs import force_setattr

from .source import MAX_TOKENS, MAX_UTILITY

__all__ = ["Count", "Id", "Level", "Utility", "named_levels"]

# The bounds the decoder checks, as records.schema.json's (a value past them takes the exact path)
Count = Annotated[int, Meta(ge=0, le=MAX_TOKENS)]
Utility = Annotated[float, Meta(ge=0, le=MAX_UTILITY)]  # an integer is read as its float, as the exact path does
Id = Annotated[str, Meta(min_length=1)]


class Level(msgspec.Struct, frozen=True, gc=False, forbid_unknown_fields=True, omit_defaults=True):
    """One representation of a record: a fidelity level with its size and utility.

    A field not given is None, but ``covers`` (an empty tuple). The annotations are what the
    decoder takes: a written null is refused (the exact path words it), so they do not say
    ``| None``. ``name`` is the key the level is written under, never a field of its own: the
    decoder refuses one written with a name (:func:`named_levels`; a name written empty is
    caught by the key count, :func:`memsolve.decode.keys_kept`, and by the type scan of Python
    data), and the exact path words that error. Encoded, a level writes its name like any field,
    and decodes back as itself."""

    name: str = ""
    tokens: Count = None  # type: ignore[assignment]  # None: count from ``text`` with the policy's counter
    utility: Utility = None  # type: ignore[assignment]  # None: derive from relevance (policy ``utility.from``)
    text: str = None  # type: ignore[assignment]
    covers: tuple[Id, ...] = ()  # ids this level's text holds, besides its record's


def named_levels(levels: dict[str, Level], text: str | None) -> tuple[Level, ...] | None:
    """A record's decoded ``representations`` as its levels, each given the name it is written
    under (the decoded levels themselves: nobody holds them yet); None where a level wrote a name
    of its own, or has neither tokens nor text and the record (its ``text``) none either: the
    exact path words those."""
    for name, level in levels.items():
        if level.name or level.tokens is None and level.text is None and text is None:
            return None
        force_setattr(level, "name", name)
    return tuple(levels.values())
