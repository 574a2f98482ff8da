"""The result of a solve: frozen data first, JSON (schema ``memsolve/result/v1``) from it.

Renderers (table, JSON) only render a Result; they compute nothing. ``to_json`` is
deterministic: the same inputs give byte-identical output (no wall-clock values inside).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast, overload

from . import collection
from .policies.verdicts import Verdict
from .solver.compile import Allocation

SCHEMA = "memsolve/result/v1"
# how much of the trace a result carries: every record, the excluded ones (why each was left
# out, the audit's question), or none (an agent's per-turn call)
TRACE_MODES = ("full", "excluded", "none")


T = TypeVar("T")


class Lazy(Generic[T]):
    """A value built on first read and kept; the builder, and all it holds, let go once it ran.
    What a turn may never read (a result's lists, its prompt order, its cache trace, the greedy
    baseline) is held this way."""

    __slots__ = ("_build", "_value")

    def __init__(self, build: Callable[[], T]) -> None:
        self._build: Callable[[], T] | None = build
        self._value: T | None = None

    def get(self) -> T:
        if self._build is not None:
            self._value, self._build = self._build(), None
        return cast(T, self._value)

    @property
    def ready(self) -> bool:
        """Built already (reading it costs nothing)."""
        return self._build is None


class Deferred(Sequence[T]):
    """A tuple built on first use: a turn returns its result at once, and the lists a caller
    never reads (thousands of dropped records, every trace entry) are never built. Compares,
    hashes and prints as the tuple it stands for. ``lines``, where given, writes each item's
    JSON without building the items (None from it where the items must write it)."""

    __slots__ = ("_items", "_lines")

    def __init__(self, build: Callable[[], Iterable[T]],
                 lines: Callable[[], Sequence[str] | None] | None = None) -> None:
        self._items: Lazy[tuple[T, ...]] = Lazy(lambda: tuple(build()))
        self._lines = lines

    @property
    def items(self) -> tuple[T, ...]:
        return self._items.get()

    def json_lines(self) -> Sequence[str] | None:
        """Each item's JSON, as ``json_text(item.to_dict())`` writes it, from the writer; None
        without one."""
        return None if self._lines is None else self._lines()

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[T, ...]: ...
    def __getitem__(self, index: int | slice) -> T | tuple[T, ...]:
        return self.items[index]

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[T]:
        return iter(self.items)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Deferred):
            return self.items == other.items
        return isinstance(other, tuple) and self.items == other

    def __hash__(self) -> int:
        return hash(self.items)

    def __repr__(self) -> str:
        return repr(self.items)

    def __reduce__(self) -> tuple[Any, ...]:
        # as its items (its builder and writer are closures over the run, which pickle cannot hold)
        return (type(self), (self.items.__iter__,))


class Ordering(Deferred[str]):
    """The result's prompt order: the ids, built on first read, and the turn's prompt order for
    the next turn (arrays, built on first read): ``arrange`` gives a
    :class:`memsolve.cache.Arranged`, and is called once, when either is first read."""

    __slots__ = ("_arranged",)

    def __init__(self, arrange: Callable[[], Any]) -> None:
        super().__init__(lambda: self.arranged.prompt.ids)
        self._arranged = Lazy(arrange)  # once arranged, the previous order is let go

    @property
    def arranged(self) -> Any:
        return self._arranged.get()


class Trace(Deferred[T]):
    """A result's trace entries, built on first use, with a writer of their JSON lines that
    needs no entry objects (memsolve.trace_json)."""

    __slots__ = ()


_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(", ", ": "))
# JSONEncoder.encode builds a C encoder per call; a result encodes one per record, so build it once
# (the same C encoder with the same settings: identical bytes)
_C_ENCODE = None if json.encoder.c_make_encoder is None else json.encoder.c_make_encoder(
    None, _ENCODER.default, json.encoder.encode_basestring, None, ": ", ", ", False, False, False
)


def json_text(value: Any) -> str:
    """A value as the result's encoder writes it (``", "`` and ``": "`` between items)."""
    if _C_ENCODE is None or isinstance(value, str):
        return _ENCODER.encode(value)
    return "".join(_C_ENCODE(value, 0))


class Encoded(list[str]):
    """A list of mappings already written as JSON (one per item), as :func:`json_text` would."""


def json_string(value: str | None) -> str:
    """A string (or None) as the result's encoder writes it."""
    return "null" if value is None else json.encoder.encode_basestring(value)  # the encoder's own


def _encoded(items: Sequence[T], write: Callable[[T], str]) -> Encoded:
    """A result's list as JSON lines: by the list's own writer where it has one, else each item
    by ``write``."""
    lines = items.json_lines() if isinstance(items, Deferred) else None
    return Encoded(lines if lines is not None else map(write, items))


def _entry_json(entry: TraceEntry) -> str:
    return json_text(entry.to_dict())


def _rows(value: Any) -> Sequence[str] | None:
    """A list of mappings as one JSON text per item (those of an :class:`Encoded` list as they
    are); None for any other value."""
    if isinstance(value, Encoded):
        return value
    if isinstance(value, list) and all(isinstance(v, dict) for v in value):
        return [json_text(v) for v in value]
    return None


def json_parts(data: Mapping[str, Any]) -> list[str]:
    """:func:`dumps_by_line`'s text in pieces, to be written one after another (a full trace of a
    million records is 700 MB: joined, and then encoded, it would be held three times)."""
    parts = ["{\n"]
    items = list(data.items())
    for index, (key, value) in enumerate(items):
        comma = "," if index < len(items) - 1 else ""
        rows = _rows(value)
        if rows:
            parts.append(f"  {json_text(key)}: [\n    ")
            for row in rows:
                parts += (row, ",\n    ")
            parts[-1] = f"\n  ]{comma}\n"
        else:
            parts.append(f"  {json_text(key)}: {json_text(value)}{comma}\n")
    parts.append("}\n")
    return parts


def dumps_by_line(data: Mapping[str, Any]) -> str:
    """A mapping as JSON: one key per line, lists of mappings one item per line."""
    return "".join(json_parts(data))


@dataclass(frozen=True)
class Chosen:
    """A selected record at its level, with the text to put in the prompt."""

    id: str
    level: str
    tokens: int
    utility: float
    text: str | None = None  # the level's text, else the record's; None when neither has one

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "level": self.level, "tokens": self.tokens, "utility": self.utility,
                "text": self.text}

    def to_json(self) -> str:
        """``to_dict()`` as JSON, as the result's encoder writes it."""
        return (f'{{"id": {json_string(self.id)}, "level": {json_string(self.level)}, '
                f'"tokens": {_number(self.tokens)}, "utility": {_number(self.utility)}, '
                f'"text": {json_string(self.text)}}}')


@dataclass(frozen=True)
class Dropped:
    """An eligible record the allocation left out (chose delete for)."""

    id: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "reason": self.reason}

    def to_json(self) -> str:
        """``to_dict()`` as JSON, as the result's encoder writes it."""
        return f'{{"id": {json_string(self.id)}, "reason": {json_string(self.reason)}}}'


@dataclass(frozen=True)
class Excluded:
    """A record a rule left out, named by the first failing rule."""

    id: str | None
    rule: str
    reason: str
    position: int = field(default=-1, compare=False)  # among the tenant's records; names records without an id

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "rule": self.rule, "reason": self.reason}

    def to_json(self) -> str:
        """``to_dict()`` as JSON, as the result's encoder writes it (a million of them, at most)."""
        return (f'{{"id": {json_string(self.id)}, "rule": {json_string(self.rule)}, '
                f'"reason": {json_string(self.reason)}}}')


def _number(value: Any) -> str:
    """A number as the encoder writes it (anything else through the encoder itself)."""
    kind = type(value)
    if kind is int:
        return int.__repr__(value)
    if kind is float and value - value == 0:  # finite: the encoder refuses the others, and says so
        return float.__repr__(value)
    return json_text(value)


@dataclass(frozen=True)
class TraceEntry:
    """Everything decided about one record, in input order."""

    id: str | None
    position: int  # input order among the records of this run's tenant (0, 1, ...)
    outcome: str  # selected, dropped or excluded
    rules: tuple[Verdict, ...]
    allocation: Allocation | None = None  # eligible records: the level chosen, the levels offered

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "position": self.position,
            "outcome": self.outcome,
            "rules": [r.to_dict() for r in self.rules],
        }
        a = self.allocation
        if a is not None:
            out["allocation"] = a.to_dict()
            if a.repairs:
                out["repairs"] = [r.to_dict() for r in a.repairs]
            if a.derived is not None:
                out["derived_utility"] = a.derived.to_dict()
        return out


@dataclass(frozen=True)
class Price:
    """The round's price: λ, λ/B per token, and the pricing queue before and after the round."""

    lam: float
    per_token: float
    queue_before: float
    queue_after: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "lambda": self.lam,
            "per_token": self.per_token,
            "queue_before": self.queue_before,
            "queue_after": self.queue_after,
        }


class GreedyReport(Mapping[str, float]):
    """The greedy baseline's ``objective`` and its ``loss`` against the reported objective: the
    baseline runs when the report is first read (a turn that only reads its prompt never runs it)."""

    def __init__(self, baseline: Callable[[], float], objective: float) -> None:
        def values() -> dict[str, float]:
            greedy = baseline()
            return {"objective": greedy, "loss": objective - greedy}

        self._values = Lazy(values)

    def __getitem__(self, key: str) -> float:
        return self._values.get()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(("objective", "loss"))

    def __len__(self) -> int:
        return 2

    def __repr__(self) -> str:  # never runs the baseline: a log line or a debugger must not solve
        return repr(self._values.get()) if self._values.ready else "GreedyReport(not yet run)"


@dataclass(frozen=True)
class SolverReport:
    """How the allocation was found: ``engine`` is the engine asked for (whose optimum the run
    proved), ``allocated_by`` the engine whose allocation is reported (the DP's tie-rule
    representative whenever the DP proves the same optimum)."""

    engine: str
    allocated_by: str
    status: str
    bound: float | None
    cross_check: Mapping[str, Any] | None
    greedy: Mapping[str, Any] | None
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"engine": self.engine, "allocated_by": self.allocated_by, "status": self.status,
                               "bound": self.bound}
        if self.detail:
            out["detail"] = self.detail
        out["cross_check"] = None if self.cross_check is None else dict(self.cross_check)
        if self.greedy is not None:
            out["greedy"] = dict(self.greedy)
        return out


@dataclass(frozen=True)
class Compression:
    """Does the preferred action survive compression? Compares the best of the original and of the
    compressed action values (ties: first index) and the gap to the runner-up."""

    original_action: int
    compressed_action: int
    original_gap: float | None
    compressed_gap: float | None

    @property
    def preserved(self) -> bool:
        return self.original_action == self.compressed_action

    @property
    def zero_gap(self) -> bool:
        return self.original_gap == 0 or self.compressed_gap == 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "original_action": self.original_action,
            "compressed_action": self.compressed_action,
            "preserved": self.preserved,
            "original_gap": self.original_gap,
            "compressed_gap": self.compressed_gap,
            "zero_gap": self.zero_gap,
        }


def compression_check(original: tuple[float, ...], compressed: tuple[float, ...]) -> Compression:
    def best_and_gap(values: tuple[float, ...]) -> tuple[int, float | None]:
        best = max(range(len(values)), key=lambda i: (values[i], -i))  # ties: first index
        rest = [v for i, v in enumerate(values) if i != best]
        return best, (values[best] - max(rest)) if rest else None

    o, og = best_and_gap(original)
    c, cg = best_and_gap(compressed)
    return Compression(o, c, og, cg)


@dataclass(frozen=True)
class Result:
    """What memsolve decided, for whom, and why."""

    policy_name: str
    policy_sha256: str
    records_sha256: str
    records_count: int
    round: int
    now: float | str | None
    budget: int
    max_records: int | None
    price: Price
    solver: SolverReport
    objective: float
    utility: float
    tokens_used: int
    # tuples, or Deferred ones (built when first read)
    selected: Sequence[Chosen]
    dropped: Sequence[Dropped]
    excluded: Sequence[Excluded]
    other_tenants: int  # records of other tenants: counted, never described
    trace: Sequence[TraceEntry]
    compression: Compression | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)  # further sections: ``state`` in a round
    trace_mode: str = "full"  # which entries ``trace`` holds (TRACE_MODES)
    # DESIGN §15: the selected ids in prompt order (the pipeline always sets it), and the cache
    # trace (a memsolve.cache.CacheTrace) when the policy has a cache block
    order: Sequence[str] | None = None
    cache: Any = None

    @property
    def prompt_order(self) -> tuple[str, ...]:
        """The selected ids in the order to put them in the prompt (unchanged ones first, in the
        previous turn's order; then by id); ``selected`` itself stays in input order."""
        return tuple(self.order) if self.order is not None else tuple(sorted(c.id for c in self.selected))

    def in_prompt_order(self) -> tuple[Chosen, ...]:
        """The selected records in prompt order."""
        by_id = {c.id: c for c in self.selected}
        return tuple(by_id[i] for i in self.prompt_order)

    def to_dict(self) -> dict[str, Any]:
        return self._fields(encoded=False)

    def _fields(self, encoded: bool) -> dict[str, Any]:
        """The result's fields; with ``encoded``, its long lists of records already as JSON."""
        out: dict[str, Any] = {
            "schema": SCHEMA,
            "policy": {"name": self.policy_name, "sha256": self.policy_sha256},
            "records": {"sha256": self.records_sha256, "count": self.records_count},
            "round": self.round,
            "now": self.now,
            "budget": {"tokens": self.budget, "max_records": self.max_records},
            "price": self.price.to_dict(),
            "solver": self.solver.to_dict(),
            "objective": self.objective,
            "utility": self.utility,
            "tokens_used": self.tokens_used,
            "selected": _encoded(self.selected, Chosen.to_json) if encoded else [c.to_dict() for c in self.selected],
            "dropped": _encoded(self.dropped, Dropped.to_json) if encoded else [d.to_dict() for d in self.dropped],
            "excluded": _encoded(self.excluded, Excluded.to_json) if encoded else [e.to_dict() for e in self.excluded],
            "other_tenants": self.other_tenants,
            "trace": _encoded(self.trace, _entry_json) if encoded else [t.to_dict() for t in self.trace],
        }
        if self.compression is not None:
            out["compression"] = self.compression.to_dict()
        if self.cache is not None:  # a policy with a cache block (DESIGN §15); without one the JSON stays as it was
            out["prompt_order"] = list(self.prompt_order)
            out["cache"] = self.cache.to_dict()
        out.update(self.extra)
        return out

    def to_json(self) -> str:
        """The result as JSON text, ending in a newline; byte-identical for identical inputs.

        One top-level field per line and one list item (a record) per line: readable, diffable
        line by line, and written by the C encoder (an indented dump is ten times slower).
        """
        return "".join(self.json_parts())

    def json_parts(self) -> list[str]:
        """:meth:`to_json`'s text in pieces, for writing a large result without joining it."""
        with collection.paused():
            return json_parts(self._fields(encoded=True))

    def entry(self, record_id: str) -> TraceEntry | None:
        return next((t for t in self.trace if t.id == record_id), None)

    def outcomes(self) -> dict[str, dict[str, Any]]:
        """Each record's outcome, keyed by id (records without an id by ``#position``, a duplicate id
        by ``id#position``): what audits, baselines, diffs and policy tests compare."""
        out: dict[str, dict[str, Any]] = {}
        for s in self.selected:
            out[s.id] = {"outcome": "selected", "level": s.level}
        for d in self.dropped:
            out[d.id] = {"outcome": "dropped", "reason": d.reason}
        for e in self.excluded:
            # no id, or the id of a record already listed (a duplicate): keyed by its position too,
            # so it never overwrites the record that holds the id
            key = e.id if e.id is not None and e.id not in out else f"{e.id or ''}#{e.position}"
            out[key] = {"outcome": "excluded", "rule": e.rule, "reason": e.reason}
        return out


def outcome_key(value: Mapping[str, Any] | None) -> tuple[Any, ...] | None:
    """What makes two outcomes the same: outcome, level and rule (not the reason's wording)."""
    return None if value is None else (value["outcome"], value.get("level"), value.get("rule"))


def describe_outcome(value: Mapping[str, Any] | None) -> str:
    """An outcome in words: ``selected at raw``, ``excluded by freshness``, ``dropped``, ``absent``."""
    if value is None:
        return "absent"
    if value["outcome"] == "selected":
        return f"selected at {value['level']}"
    if value["outcome"] == "excluded":
        return f"excluded by {value['rule']}"
    return "dropped"
