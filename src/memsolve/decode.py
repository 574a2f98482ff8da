"""The fast path of :func:`memsolve.load_records`: records decoded by msgspec into typed values,
from JSON Lines lines (:func:`lines`) and from Python data or a parsed JSON or YAML document
(:func:`items`).

The published JSON Schema (``records.schema.json``) stays the contract. The types below accept
a subset of what it accepts, and ``records`` builds a record they take into the same
:class:`~memsolve.records.Record` the exact path builds. Anything else goes to the exact path
(parse, schema, semantic checks), which words the error:

- a line the types refuse, or one whose record the exact path would refuse or word
  differently (a level without a size, an unparseable time, ``delete`` as a level name) goes to
  the exact path on its own;
- a line that may break the nesting or string limits goes to the exact path on its own, and a
  text where a key may be written twice (msgspec keeps the last one silently) goes there whole,
  line by line (``records._jsonl``): each line is one record, and its errors are that record's.
  So does a text whose values written back cannot tell that no key was dropped: a level written
  with an empty ``covers`` list or an empty ``name`` (both read as the level's defaults) sends the
  whole text there, slower and with the same answer.

A record's levels are decoded straight into :class:`~memsolve.level.Level` objects (a level's
name, the key it is written under, is set afterwards by :func:`memsolve.level.named_levels`).

Python data may hold what JSON never gives (numpy strings and numbers, Decimals, str Enums,
tuples, mappings that are not dicts, dates, lone surrogates): :func:`items` takes a record only
where every value it reads is of JSON's own types (``type(v) is str``, ``dict``, ``list``...),
and the rest take the exact path.

``tests/test_decode.py`` holds the two paths to equal record sets, errors included, on
generated texts, the fuzz corpus and generated Python data with such values swapped in.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from itertools import compress
from typing import Annotated, Any

import msgspec
from msgspec import UNSET, Meta, UnsetType

from .compiled import scans
from .level import Count, Id, Level, Utility
from .source import quote_colons

__all__ = ["UNSET", "Decoded", "DecodedRecord", "items", "keys_kept", "lines"]

_BIG = sys.float_info.max
_INT = 2**63 - 1  # msgspec bounds an int within 64 bits; the exact path's limit is 2**63
Number = Annotated[int, Meta(ge=-_INT, le=_INT)] | Annotated[float, Meta(ge=-_BIG, le=_BIG)]
Duration = Annotated[int, Meta(ge=0, le=_INT)] | Annotated[float, Meta(ge=0, le=_BIG)]
Score = Annotated[float, Meta(ge=0, le=1)]


# Absent and null differ only for `ttl` (null: never expires) and `authority` (written `false`
# must be written back for the key count, below): those two default to UNSET. Every other field
# refuses null, so None marks it absent, and with omit_defaults a value written back is a key given.
class DecodedRecord(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True, gc=False):
    """records.schema.json's record, less what the exact path must word (see the module)."""

    id: Id
    timestamp: Number | str
    tenant: str = None  # type: ignore[assignment]
    store: str = None  # type: ignore[assignment]
    session: str = None  # type: ignore[assignment]
    key: str = None  # type: ignore[assignment]
    ttl: Duration | str | None | UnsetType = UNSET
    authority: bool | UnsetType = UNSET
    version: str = None  # type: ignore[assignment]
    document: str = None  # type: ignore[assignment]
    text: str = None  # type: ignore[assignment]
    tokens: Count = None  # type: ignore[assignment]
    decision_value: Utility = None  # type: ignore[assignment]
    utility: Utility = None  # type: ignore[assignment]
    representations: dict[str, Level] = None  # type: ignore[assignment]
    covers: tuple[Id, ...] = None  # type: ignore[assignment]
    score: Score = None  # type: ignore[assignment]
    metadata: dict[str, Any] = None  # type: ignore[assignment]


_LINE = msgspec.json.Decoder(DecodedRecord)
_ENCODE = msgspec.json.Encoder().encode
# RecursionError: msgspec's own depth limit, in `metadata` nested thousands deep
_REFUSED = (msgspec.DecodeError, msgspec.ValidationError, RecursionError)

# One item of a text: its decoded value, or None where the exact path must read it.
Decoded = DecodedRecord | None


def lines(texts: Sequence[str]) -> list[Decoded]:
    """Each JSON Lines line decoded, None where the types refuse it."""
    out: list[Decoded] = []
    rest = iter(texts)
    while True:  # a loop in C up to each line the types refuse: list.extend keeps what came before it
        try:
            out.extend(map(_LINE.decode, rest))
            return out
        except _REFUSED:
            out.append(None)  # the line that raised (map took it from `rest`)


def items(values: Sequence[Any]) -> list[Decoded]:
    """Each record given as Python data (or read from a JSON or YAML document) converted by the
    types, None where they refuse it or where it holds a value JSON would not have given: a
    subclass of str, int or float (a str Enum, numpy's numbers), a tuple or set for a list, a
    date (YAML's), a mapping that is no dict. The exact path takes those, and words its errors."""
    values = values if type(values) is list else list(values)
    plain = plain_records(values)
    every = False not in plain
    taken = values if every else list(compress(values, plain))
    try:  # all at once where every record converts (one call, not one per record)
        converted: list[Decoded] = msgspec.convert(taken, list[DecodedRecord])
    except _CONVERT_REFUSED:
        converted = [_converted(item) for item in taken]
    if every:
        return converted
    laid = iter(converted)
    return [next(laid) if ok else None for ok in plain]


# msgspec's, and UnicodeEncodeError: a lone surrogate in a string (the exact path's error)
_CONVERT_REFUSED = (*_REFUSED, UnicodeEncodeError)


def _converted(item: dict[str, Any]) -> Decoded:
    try:
        return msgspec.convert(item, DecodedRecord)
    except _CONVERT_REFUSED:
        return None


_SCALARS = frozenset((str, int, float, bool, type(None)))


def _plain(item: Any) -> bool:
    """Whether an item is a record (a dict) whose values are of JSON's own types (``metadata`` a
    dict, whatever it holds: the record keeps none of it, and both paths check its numbers the
    same way; a mapping that is no dict is the exact path's error). Without the compiled scan
    (``_scan.c``) this runs for every record: loops, not generators."""
    if type(item) is not dict:
        return False
    scalars = _SCALARS
    for name, value in item.items():
        if type(value) in scalars:
            continue
        if type(name) is not str:  # no field name: the exact path words it (comparing it could run its code)
            return False
        if name == "metadata" and type(value) is dict:
            continue
        if name == "covers":
            if not _names(value):
                return False
        elif name == "representations" and type(value) is dict:
            for level, spec in value.items():
                if type(level) is not str or type(spec) is not dict:
                    return False
                for field, setting in spec.items():
                    if type(field) is not str or field == "name":  # a level's name is its key: the exact
                        return False  # path refuses the field, and words a key that is no field name
                    if type(setting) not in scalars and not (field == "covers" and _names(setting)):
                        return False
        else:
            return False
    return True


def _names(value: Any) -> bool:
    return type(value) is list and all(type(name) is str for name in value)


def _plain_records_python(values: list[Any]) -> list[bool]:
    return [_plain(item) for item in values]


# plain_records(items) -> one flag per item: a record (a dict) of JSON's own types (:func:`_plain`)
plain_records: Callable[[list[Any]], list[bool]] = getattr(scans(), "plain_records", _plain_records_python)


def keys_kept(text_count: int, decoded: list[Decoded]) -> bool:
    """No key was dropped: the texts of the decoded items held ``text_count`` `":`, and their
    values written back hold as many (a key written twice is kept once; a `":` inside a string
    is written back as it was: a quote in a string is escaped as \\", and a text that writes it,
    or a colon, with a \\u escape goes to the exact path, :func:`source.counted_keys`). The
    compiled scan counts them from the values, without writing them back."""
    written = None if _written_keys is None else _written_keys(decoded, DecodedRecord, Level)
    if written is None:  # no compiled scan, or a value of a type it does not know
        written = quote_colons(_ENCODE([d for d in decoded if d is not None]))
    return text_count == written


# written_keys(decoded, DecodedRecord, Level) -> the `":` quote_colons finds in the decoded values
# written back by _ENCODE (omit_defaults), or None for a value of a type it does not know
_written_keys: Callable[[list[Decoded], type, type], int | None] | None = getattr(scans(), "written_keys", None)
