"""What every importer shares: reading an export, taking fields, building records, the summary.

A source module (``mem0``, ``langgraph``, ``letta``, ``graphiti``) declares its column of the
mapping table as data (``MAPPING``) and one function, ``map_item(fields, options)``, that takes
the mapped values out of one source item. Whatever it does not take stays in the record's
``metadata``, so an import loses nothing; a value it needs and cannot find is an
:class:`~memsolve.errors.InputError` naming the item's position (and its line, for a file).
"""

from __future__ import annotations

import copy
import functools
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from typing import Any

from ..errors import InputError, Location, shown
from ..source import Document, render_path

# the record fields an importer fills, in the order each output line writes them
FIELDS = ("id", "tenant", "store", "session", "key", "timestamp", "ttl", "text", "score", "metadata")
LISTS = ("results", "items", "memories")  # where an export object holds its array (DESIGN §12)


@dataclass(frozen=True)
class Options:
    """The choices a user makes for an import (all optional; each source has defaults).

    Field paths are dotted, with list indices as numbers: ``metadata.user``, ``namespace.1``.
    """

    tenant: str | None = None  # one tenant for every record (overrides the source's tenant field)
    tenant_from: str | None = None  # the source field that holds the tenant
    key_from: str | None = None  # the source field that holds the fact key (latest-key)
    text_from: str | None = None  # the source field that holds the text
    store: str | None = None  # one store for every record
    ttl: str | None = None  # a duration (`30m`, `7d`) for records whose source gives no expiry
    omit: tuple[str, ...] = ()  # source fields not to carry into metadata (embeddings, say)
    skip_unmappable: bool = False  # leave out (and count) items that cannot be mapped, instead of failing

    def __post_init__(self) -> None:
        if self.ttl is not None:  # checked once, up front: a bad --ttl would otherwise fail every record later
            from ..timeutil import RFC3339, TimeValueError, parse_duration

            try:
                parse_duration(self.ttl, RFC3339)
            except TimeValueError as exc:
                raise InputError(f"--ttl: {exc}") from None


@dataclass(frozen=True)
class Skipped:
    """An item left out with ``skip_unmappable``: where it was and why."""

    position: int
    error: InputError
    tenant: str | None = None  # the item's tenant, where it names one (never shown: DESIGN §9)
    foreign: bool = False  # refused because its tenant is not --tenant's


@dataclass(frozen=True)
class Imported:
    """The records an import produced, and what the summary line reports about it."""

    source: str
    records: tuple[dict[str, Any], ...]
    read: int  # source items read
    skipped: tuple[Skipped, ...] = ()
    untenanted: int = 0  # records written without a tenant (a tenant policy excludes them, fail closed)
    utc_assumed: int = 0  # times without an offset, read as UTC
    omitted: tuple[str, ...] = ()  # source fields left out of metadata by request
    score_in_metadata: bool = False  # scores kept as metadata.score (the record schema has no `score` field)
    scores_out_of_range: int = 0  # scores outside [0, 1] (raw similarities, say), kept as metadata.score
    replaced: int = 0  # records whose source store a --store replaced (the source value stays in metadata)
    unkeyed: int = 0  # records without a key because --key-from named a field they lack

    def jsonl(self) -> str:
        """The records as JSON Lines (byte-identical for the same input)."""
        return "".join(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
                       for record in self.records)

    def summary(self, file: str) -> str:
        """One line for stderr: how many were imported, from what, and everything not plain."""
        line = f"imported {len(self.records)} of {self.read} {self.source} items from {file}"
        notes = []
        if self.skipped:
            foreign = sum(s.foreign for s in self.skipped)
            notes.append(f"{len(self.skipped)} skipped (unmappable, at "
                         + ", ".join(f"[{s.position}]" for s in self.skipped[:10])
                         + (", ..." if len(self.skipped) > 10 else "") + ")"
                         + (f", {foreign} of them another tenant's" if foreign else ""))
        if self.untenanted:
            notes.append(f"{self.untenanted} without a tenant")
        if self.utc_assumed:
            notes.append(f"{self.utc_assumed} times without an offset read as UTC")
        if self.omitted:
            notes.append("omitted fields " + ", ".join(f"`{name}`" for name in self.omitted))
        if self.score_in_metadata:
            notes.append("scores kept as metadata.score")
        if self.scores_out_of_range:
            notes.append(f"{self.scores_out_of_range} scores outside [0, 1] kept as metadata.score")
        if self.replaced:
            notes.append(f"{self.replaced} source stores replaced by --store (kept in metadata)")
        if self.unkeyed:
            notes.append(f"{self.unkeyed} without `--key-from` field, so without a key")
        return line + ("; " + "; ".join(notes) if notes else "")


class Unmappable(Exception):
    """One item cannot be mapped: the message, and the path inside the item it concerns."""

    def __init__(self, message: str, path: Sequence[Any] = ()) -> None:
        super().__init__(message)
        self.message, self.path = message, tuple(path)


class Foreign(Unmappable):
    """The item is another tenant's than ``--tenant`` names."""


@functools.lru_cache(maxsize=256)  # a handful of distinct paths, asked for once per item
def split_path(text: str) -> tuple[Any, ...]:
    """``metadata.user`` → ("metadata", "user"); ``namespace.0`` → ("namespace", 0)."""
    if not text or any(not part for part in text.split(".")):
        raise InputError(f"field path `{shown(text)}` is empty or has an empty part; write it like `metadata.user`")
    return tuple(int(part) if part.isdigit() else part for part in text.split("."))


class Fields:
    """One source item being mapped: values taken out of a copy; what remains is metadata."""

    def __init__(self, item: Mapping[str, Any], utc: Callable[[], None], owned: bool = False) -> None:
        # an item parsed here is ours: only the mappings a take changes are copied (copy on write);
        # a caller's object is copied whole, so that no record shares anything with it
        self.rest: dict[str, Any] = dict(item) if owned else copy.deepcopy(dict(item))
        self._item = item
        self._utc = utc

    def peek(self, path: str | Sequence[Any]) -> Any:
        """The value at ``path`` in the item as read (None when absent); it stays in metadata."""
        value: Any = self._item
        for part in split_path(path) if isinstance(path, str) else path:
            if type(value) is dict or isinstance(value, Mapping):  # the exact type first: ABC checks are slow
                value = value.get(str(part))
            elif isinstance(value, list) and isinstance(part, int) and part < len(value):
                value = value[part]
            else:
                return None
        return value

    def has(self, path: str | Sequence[Any]) -> bool:
        return self.peek(path) is not None

    def take(self, path: str | Sequence[Any]) -> Any:
        """The value at ``path``, taken out of what goes to metadata (a mapping left empty goes too)."""
        parts = split_path(path) if isinstance(path, str) else tuple(path)
        if len(parts) == 1 and isinstance(parts[0], str):  # a top-level field: most takes
            self.rest.pop(parts[0], None)
            return self._item.get(parts[0])
        value = self.peek(parts)
        if value is None:
            if len(parts) == 1:
                self.rest.pop(str(parts[0]), None)  # an explicit null carries nothing
            return None
        parents: list[tuple[Any, Any]] = []
        node: Any = self.rest
        for part in parts[:-1]:
            if not isinstance(node, dict):
                return value  # inside a list: the element stays (removing it would shift the others)
            parents.append((node, part))
            child = node[str(part)]
            if isinstance(child, dict):
                child = node[str(part)] = dict(child)  # copy on write: the item read is never changed
            node = child
        if isinstance(node, dict):
            del node[str(parts[-1])]
            for parent, part in reversed(parents):  # an emptied mapping carries nothing either
                child = parent[str(part)] if isinstance(parent, dict) else parent[part]
                if child == {} and isinstance(parent, dict):
                    del parent[str(part)]
                else:
                    break
        # an element of a list stays (removing it would shift the others); it is peeked, in effect
        return value

    def text(self, path: str) -> str | None:
        """The text at ``path``, taken (None when absent); a value of another type is unmappable."""
        value = self.take(path)
        if value is None or isinstance(value, str):
            return value
        raise Unmappable(f"`{path}` holds {_type_name(value)}, expected text", split_path(path))

    def tenant(self, options: Options, *paths: str) -> str | None:
        """The item's own tenant: the first of ``paths`` that holds one. With ``--tenant`` it stays in
        metadata and must be that tenant: another tenant's item is unmappable (its value never shown)."""
        for path in paths:
            value = self.peek(path)
            if value is None:
                continue
            if not isinstance(value, str):
                raise Unmappable(f"`{path}` holds {_type_name(value)}, expected text for the tenant", split_path(path))
            if options.tenant is None:
                self.take(path)
            elif value != options.tenant:
                raise Foreign(f"the item's tenant (`{path}`) is not --tenant's; another tenant's item is never "
                              "imported under it", split_path(path))
            return value
        return None

    def first(self, *paths: str) -> tuple[str | None, Any]:
        """The first of ``paths`` that holds a value, taken; (None, None) when none does."""
        for path in paths:
            if self.has(path):
                return path, self.take(path)
        return None, None

    def time(self, value: Any, path: str) -> tuple[str, datetime]:
        """A source time as RFC 3339 text and as a datetime (a time without offset is UTC, counted)."""
        if isinstance(value, datetime):
            moment = value
        elif isinstance(value, date):
            moment = datetime(value.year, value.month, value.day)
        elif isinstance(value, str):
            try:
                moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00").replace("z", "+00:00"))
            except ValueError:
                raise Unmappable(f"`{shown(value)}` is not an ISO 8601 time", split_path(path)) from None
        else:
            raise Unmappable(f"expected an ISO 8601 time, got {type(value).__name__}", split_path(path))
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=timezone.utc)
            self._utc()
        text = moment.isoformat()
        return (text[:-6] + "Z" if text.endswith("+00:00") else text), moment


def duration(delta: timedelta | float) -> str:
    """A duration as memsolve writes one: whole seconds where exact, else seconds with a fraction."""
    seconds = delta.total_seconds() if isinstance(delta, timedelta) else float(delta)
    if seconds < 0:
        raise Unmappable("the expiry is before the timestamp")
    return f"{int(seconds)}s" if seconds == int(seconds) else f"{seconds!r}s"


def as_mapping(item: Any) -> Any:
    """A source object as plain data: pydantic models (Letta, Graphiti) by ``model_dump``,
    LangGraph ``Item``/``SearchItem`` by ``dict()``; mappings as they are."""
    if isinstance(item, Mapping):
        return item
    dump = getattr(item, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    as_dict = getattr(item, "dict", None)
    if callable(as_dict) and hasattr(item, "namespace") and hasattr(item, "key"):  # LangGraph Item
        return as_dict()
    return item


@dataclass
class _Tally:
    untenanted: int = 0
    utc: int = 0
    out_of_range: int = 0
    replaced: int = 0
    unkeyed: int = 0
    skipped: list[Skipped] = field(default_factory=list)
    ids: dict[tuple[Any, str], int] = field(default_factory=dict)  # (tenant, id) → the position that has it


def convert(adapter: Any, items: Iterable[Any], options: Options,
            locate: Callable[[Sequence[Any]], Location] | None = None, owned: bool = False) -> Imported:
    """Map every item with the source module ``adapter`` (its ``SOURCE``, ``MAPPING`` and
    ``map_item``); apply the user's choices; check that each record has what a record needs.
    ``owned``: the items were parsed for this import (nothing else holds them)."""
    from .. import schemas

    source = adapter.SOURCE

    score_field = "score" in schemas.load_schema("records")["$defs"]["record"]["properties"]
    locate = locate or (lambda path: Location(f"<{source}>", path=render_path(path)))
    omit = tuple(dict.fromkeys(options.omit))
    tally = _Tally()
    records: list[dict[str, Any]] = []
    scored = False
    read = 0
    for position, raw in enumerate(items):
        read += 1
        try:
            item = as_mapping(raw)
            record = _one(adapter, item, options, omit, tally, owned)
            first = tally.ids.setdefault((record.get("tenant"), record["id"]), position)
            if first != position:  # two items, one id: latest-key and explain could not tell them apart
                raise Unmappable(f"id `{shown(record['id'])}` is also item [{first}]'s")
        except Unmappable as problem:
            error = InputError(problem.message, locate((position, *problem.path)))
            if not options.skip_unmappable:
                raise error from None
            tally.skipped.append(Skipped(position, error, _tenant_of(adapter, item, options),
                                         isinstance(problem, Foreign)))
            continue
        if "score" in record and not (score_field and 0 <= record["score"] <= 1):
            # the record schema cannot hold it (yet, or outside [0, 1]: a raw similarity): kept, in metadata
            record.setdefault("metadata", {})["score"] = record.pop("score")
            record["metadata"] = record.pop("metadata")  # metadata stays the last field
            scored = scored or not score_field
            tally.out_of_range += score_field
        records.append(record)
    return Imported(source, tuple(records), read, tuple(tally.skipped), tally.untenanted, tally.utc, omit, scored,
                    tally.out_of_range, tally.replaced, tally.unkeyed)


def _tenant_of(adapter: Any, item: Any, options: Options) -> str | None:
    """The tenant an item names, read without mapping it (for an item that could not be mapped)."""
    if not isinstance(item, Mapping):
        return None
    fields = Fields(item, lambda: None, owned=True)
    for path in (options.tenant_from,) if options.tenant_from else adapter.TENANT_FIELDS:
        value = fields.peek(path)
        if value is not None:
            return value if isinstance(value, str) else None
    return None


def _one(adapter: Any, item: Any, options: Options, omit: tuple[str, ...], tally: _Tally,
         owned: bool) -> dict[str, Any]:
    source, table = adapter.SOURCE, adapter.MAPPING
    if not isinstance(item, Mapping):
        raise Unmappable(f"expected a {source} item (a mapping), got {_type_name(item)}")
    utc_here = [0]
    fields = Fields(item, lambda: utc_here.__setitem__(0, utc_here[0] + 1), owned)
    # the user's choices first: a field they name is theirs, whatever the source default would take
    chosen: dict[str, Any] = {}
    for name, path in (("tenant", options.tenant_from), ("key", options.key_from), ("text", options.text_from)):
        if path is None:
            continue
        value = fields.take(path) if name != "tenant" or options.tenant is None else fields.peek(path)
        if value is None:
            if name == "text":
                raise Unmappable(f"no `{shown(path)}` to take the text from", split_path(path))
            chosen[name] = None
            continue
        chosen[name] = _text_of(value, path, name)
        if name == "tenant" and options.tenant is not None and chosen[name] != options.tenant:
            raise Foreign(f"the item's tenant (`{shown(path)}`) is not --tenant's; another tenant's item is never "
                          "imported under it", split_path(path))
    mapped = adapter.map_item(fields, options, chosen)
    record: dict[str, Any] = {}
    replaced = False
    for name in FIELDS[:-1]:
        value = chosen[name] if name in chosen else mapped.get(name)
        if name == "tenant" and options.tenant is not None:
            value = options.tenant
        if name == "store" and options.store is not None:
            # the source's own store stays in metadata (map_item peeks it then): counted where it differs
            replaced = adapter.STORE_FIELD is not None and fields.has(adapter.STORE_FIELD) and value != options.store
            value = options.store
        if name == "ttl" and value is None and options.ttl is not None:
            value = options.ttl
        if value is not None:
            record[name] = value
    if not isinstance(record.get("id"), str) or not record["id"]:
        raise Unmappable(f"{source} item has no id (expected {table['id']})")
    if "timestamp" not in record:
        raise Unmappable(f"{source} item has no time (expected {table['timestamp']})")
    if "text" not in record:
        raise Unmappable(f"{source} item has no text (expected {table['text']}); "
                         "name the field that holds it with --text-from")
    score = record.get("score")
    if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float))
                              or not math.isfinite(score)):
        raise Unmappable(f"score `{shown(score)}` is not a finite number", ("score",))
    # a score outside [0, 1] (a raw cosine, a BM25 value) is no record score: convert keeps it in metadata
    for name in omit:
        fields.take(name)
    if fields.rest:
        record["metadata"] = fields.rest
    if "tenant" not in record:
        tally.untenanted += 1
    tally.replaced += replaced
    tally.unkeyed += options.key_from is not None and chosen.get("key") is None
    tally.utc += utc_here[0]
    return record


def _text_of(value: Any, path: str, name: str) -> str:
    """A chosen field's value as the string a record field needs (a list of strings: joined, sorted)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return ",".join(sorted(value))
    if isinstance(value, (int, float)) and not isinstance(value, bool) and name != "text":
        return json.dumps(value)
    raise Unmappable(f"`{shown(path)}` holds {_type_name(value)}, not text for the {name}", split_path(path))


def _type_name(value: Any) -> str:
    from .. import schemas

    return schemas.type_name(value)


def read_export(file: str, source: str) -> tuple[list[Any], Callable[[Sequence[Any]], Location]]:
    """The items of an export file (``-``: standard input) and a way from an item path to its line.

    JSON (an array, or an object holding it under ``results``, ``items`` or ``memories``) or JSON
    Lines (one item a line; chosen by the ``.jsonl`` suffix, or for a file without one whose text
    is not one JSON value, or is one item on one line).
    """
    doc = _document(file)
    data = [] if doc.data is None else doc.data  # an empty file or stream holds no items
    prefix: tuple[Any, ...] = ()
    if doc.format == "json" and isinstance(data, dict):
        held = [name for name in LISTS if isinstance(data.get(name), list)]
        if not held:
            raise doc.error((), f"expected a {source} export: an array, or an object with "
                                + ", ".join(f"`{n}`" for n in LISTS) + " holding one")
        prefix = (held[0],)
        data = data[held[0]]
    elif not isinstance(data, list):
        raise doc.error((), f"expected a {source} export: an array, or an object with "
                            + ", ".join(f"`{n}`" for n in LISTS) + f" holding one; got {_type_name(data)}")
    return data, lambda path: doc.locate((*prefix, *path))


def _document(file: str) -> Document:
    from ..source import format_of, parse_text, read_stream, read_text, sniff_format

    if file == "-":
        text = read_stream()
        name, fmt = "<stdin>", None
    else:
        text, _ = read_text(file)
        name = file
        try:
            fmt = format_of(file)
        except InputError:
            fmt = None  # no known suffix: decided by the text below
        if fmt == "yaml":
            raise InputError("expected a JSON or JSON Lines export, got a YAML file", Location(file))
    if fmt is None:
        fmt = sniff_format(text, LISTS)
    return parse_text(text, name, fmt)

