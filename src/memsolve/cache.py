"""Cache-stable selection (DESIGN §15): the prompt order, the cache's price, and its trace.

A hosted model bills a prompt's cached prefix at a fraction of its input price; a change at
token offset o bills everything after o again. So the selected records go into the prompt in
a stable order (:func:`prompt_order`): the records kept unchanged since the previous turn first,
in the previous turn's order, then the changed and new ones by id. The previous prompt's cached
prefix then stays intact up to the first previous record that was not kept.

With a ``cache`` block in the policy the cost of that prompt enters the objective (the model,
in dollars of input per turn):

    cost = p · ( r · R + w · (F + T − R) )      R = reused(F + A)

p the input price per token, r and w the provider's read and write multipliers, F the fixed
prompt before the memories (``prefix_tokens``), T the memories' tokens, A the tokens of the
intact prefix of memories, and ``reused`` the provider's rounding (nothing below its minimum
prefix, whole blocks of 128 tokens at OpenAI). The objective subtracts ``value_per_dollar · cost``:
a price w·V·p per token on top of λ/B, a constant, and a bonus V·p·(w − r)·R for the intact
prefix (:func:`problem`; solved exactly by :mod:`memsolve.solver.cache`). What this leaves out
(what a provider may do differently) is stated in README, Prompt caching.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .policies.model import CacheSettings
from .records import Record
from .result import Chosen, Lazy, Ordering
from .solver.compile import Compiled, level_text

if TYPE_CHECKING:  # the exact cache solver is imported when a policy with a cache block solves
    from .solver.cache import CacheProblem, CacheSolution


@dataclass(frozen=True)
class Rates:
    """A provider's cache pricing: multipliers of the input price, block size, minimum prefix."""

    read: float
    write: float
    block: int  # the prefix is matched in whole blocks of this many tokens
    min_prefix: int  # a shorter prefix is not cached at all


# Published list prices (2025): Anthropic reads at 0.1x, writes at 1.25x (5-minute) or 2x (1-hour)
# and caches from 1,024 tokens; OpenAI matches in 128-token blocks from 1,024 tokens, no write
# surcharge, reads at 0.1x for its current models (0.25x-0.5x for older ones: set `read`);
# Gemini's implicit cache reads at 0.25x, no write surcharge. `none`: no cache (order is free).
PROVIDERS: dict[str, Rates] = {
    "anthropic-5m": Rates(0.1, 1.25, 1, 1024),
    "anthropic-1h": Rates(0.1, 2.0, 1, 1024),
    "openai": Rates(0.1, 1.0, 128, 1024),
    "gemini": Rates(0.25, 1.0, 1, 1024),
    "none": Rates(1.0, 1.0, 1, 0),
}


def rates(settings: CacheSettings) -> Rates:
    """The provider's rates with the policy's overrides."""
    base = PROVIDERS[settings.provider]
    return Rates(
        base.read if settings.read is None else settings.read,
        base.write if settings.write is None else settings.write,
        base.block,
        base.min_prefix if settings.min_prefix is None else settings.min_prefix,
    )


def reused(r: Rates, prefix: int) -> int:
    """Tokens the provider reads from its cache for an intact prefix of ``prefix`` tokens."""
    return 0 if prefix < max(r.min_prefix, 1) else prefix // r.block * r.block


def dollars(settings: CacheSettings, tokens: int, read: int) -> float:
    """Modelled input dollars of a prompt: ``tokens`` memory tokens, ``read`` of its prefix (fixed
    part included) from the cache, everything else at the write multiplier."""
    r = rates(settings)
    total = settings.prefix_tokens + tokens
    return settings.input_price / 1e6 * (r.read * read + r.write * (total - read))


@dataclass(frozen=True)
class Placed:
    """One record as it stood in a prompt: the same id, level and text is the same prompt content."""

    id: str
    level: str
    tokens: int
    digest: str  # SHA-256 of the level's text ("" when it has none)

    @classmethod
    def of(cls, chosen: Chosen) -> Placed:
        return cls(chosen.id, chosen.level, chosen.tokens, _digest(chosen.text))

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "level": self.level, "tokens": self.tokens, "sha256": self.digest}


@dataclass(frozen=True)
class Held:
    """A prompt order as one process holds it: the records themselves (a record set's records are
    never changed, so the same record object at the same level is the same text), by place."""

    source: Sequence[Record]  # a compiled instance's records
    index: np.ndarray  # int64 (m,): each prompt record's place in ``source``
    names: tuple[str, ...]  # the level names ``column`` indexes
    column: np.ndarray  # int64 (m,): each prompt record's level

    def records(self) -> list[Record]:
        source = self.source
        return [source[i] for i in self.index.tolist()]


class PromptOrder:
    """A turn's selection in prompt order: what the next turn keeps its cache against.

    Each record as it stood: id, level, tokens, and the SHA-256 of the level's text. A turn's own
    order holds the records themselves (:class:`Held`, arrays): ids, levels and digests are
    derived only when read (the state store writes them; a PromptOrder read back from state
    holds them as stored). Two orders are equal when every record's id, level, tokens and text
    digest are."""

    __slots__ = ("tokens", "_ids", "_levels", "_digests", "held")

    def __init__(self, ids: Sequence[str] | None, levels: Sequence[str] | None, tokens: Sequence[int] | np.ndarray,
                 digests: Sequence[str] | None = None, held: Held | None = None) -> None:
        if held is None and (ids is None or levels is None or digests is None):
            raise ValueError("a PromptOrder needs its records, or their ids, levels and digests")
        self.tokens = np.asarray(tokens, dtype=np.int64).reshape(-1)
        self._ids = None if ids is None else tuple(ids)
        self._levels = None if levels is None else tuple(levels)
        self._digests = None if digests is None else tuple(digests)
        self.held = held

    @classmethod
    def of(cls, selected: Iterable[Chosen], order: Sequence[str]) -> PromptOrder:
        """From a result's selected records and their prompt order."""
        by_id = {c.id: c for c in selected}
        chosen = [by_id[i] for i in order]
        return cls([c.id for c in chosen], [c.level for c in chosen], [c.tokens for c in chosen],
                   [_digest(c.text) for c in chosen])

    @classmethod
    def from_dicts(cls, items: Iterable[dict[str, Any]]) -> PromptOrder:
        items = list(items)
        return cls([d["id"] for d in items], [d["level"] for d in items], [int(d["tokens"]) for d in items],
                   [d["sha256"] for d in items])

    @property
    def ids(self) -> tuple[str, ...]:
        if self._ids is None:
            assert self.held is not None
            self._ids = tuple(r.id for r in self.held.records())
        return self._ids

    @property
    def levels(self) -> tuple[str, ...]:
        if self._levels is None:
            assert self.held is not None
            names = self.held.names
            self._levels = tuple(names[j] for j in self.held.column.tolist())
        return self._levels

    @property
    def digests(self) -> tuple[str, ...]:
        """SHA-256 of each record's text at its level (computed on first read)."""
        if self._digests is None:
            self._digests = tuple(_digest(level_text(r, level))
                                  for r, level in zip(self.held.records() if self.held else (), self.levels,
                                                      strict=True))
        return self._digests

    @property
    def placed(self) -> tuple[Placed, ...]:
        return tuple(Placed(*item) for item in zip(self.ids, self.levels, self.tokens.tolist(), self.digests,
                                                   strict=True))

    def to_list(self) -> list[dict[str, Any]]:
        return [p.to_dict() for p in self.placed]

    def __len__(self) -> int:
        return len(self.tokens)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PromptOrder):
            return NotImplemented
        return (self is other or len(self) == len(other) and np.array_equal(self.tokens, other.tokens)
                and self.ids == other.ids and self.levels == other.levels and self.digests == other.digests)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"PromptOrder({list(zip(self.ids, self.levels, self.tokens.tolist(), strict=True))})"


def _digest(text: str | None) -> str:
    return "" if text is None else hashlib.sha256(text.encode("utf-8")).hexdigest()


def prompt_order(selected: Sequence[Chosen], previous: PromptOrder | None) -> tuple[str, ...]:
    """The ids of ``selected`` in prompt order: those unchanged since ``previous`` first, in its
    order; then the changed and new ones by id (a stable order that carries nothing per turn).
    (The pipeline computes the same over arrays, :func:`arrange`.)"""
    now = {c.id: c for c in selected}
    kept = [] if previous is None else [p.id for p in previous.placed
                                        if p.id in now and Placed.of(now[p.id]) == p]
    rest = sorted(set(now) - set(kept))
    return tuple(kept) + tuple(rest)


def intact_prefix(order: Sequence[str], selected: Sequence[Chosen], previous: PromptOrder | None) -> int:
    """How many records of ``previous``, from its first, this prompt repeats unchanged at its head."""
    if previous is None:
        return 0
    now = {c.id: c for c in selected}
    c = 0
    for placed, rid in zip(previous.placed, order, strict=False):
        if placed.id != rid or Placed.of(now[rid]) != placed:
            break
        c += 1
    return c


def laid_over(compiled: Compiled, previous: PromptOrder | None) -> tuple[np.ndarray, np.ndarray]:
    """Row and level column of each previous record in ``compiled``; row -1 where the record is
    not eligible now, level -1 where it cannot be kept as it was (the level not offered, its size
    or text changed). Arrays over the rows: a previous record held by this process is found at its
    old place when the record object is still there (nothing compared), else by id, and its text
    compared (with the stored digest when the order was read back from state)."""
    m = 0 if previous is None else len(previous)
    rows, levels = np.full(m, -1, dtype=np.int64), np.full(m, -1, dtype=np.int64)
    if previous is None or m == 0:
        return rows, levels
    source = compiled.source
    inst = compiled.instance
    row_of_source = np.full(len(source), -1, dtype=np.int64)
    row_of_source[compiled.rows] = np.arange(len(compiled.rows), dtype=np.int64)
    held = previous.held
    same = np.zeros(m, dtype=bool)  # the very record object: the same text at the same level
    old: list[Record] | None = None
    if held is not None:
        if held.source is source:
            same[:] = True
        else:
            old = held.records()
            size = len(source)
            same[:] = [i < size and source[i] is r for i, r in zip(held.index.tolist(), old, strict=True)]
        rows[same] = row_of_source[held.index[same]]
    column = {name: j for j, name in enumerate(compiled.levels)}
    if held is None:
        cols = np.array([column.get(name, -1) for name in previous.levels], dtype=np.int64)
    else:  # the held levels' columns now (a level no longer offered: -1)
        cols = np.array([column.get(name, -1) for name in held.names], dtype=np.int64)[held.column]
    if not same.all():  # by id among the eligible records, text compared
        ids = previous.ids
        wanted = {ids[i]: i for i in np.flatnonzero(~same).tolist()}
        for row, i in enumerate(compiled.rows.tolist()):
            at = wanted.get(source[i].id)
            if at is None:
                continue
            rows[at] = row
            j = int(cols[at])
            if j < 0:
                continue
            text = level_text(source[i], compiled.levels[j])
            if old is not None:
                unchanged = old[at] is source[i] or level_text(old[at], compiled.levels[j]) == text
            else:
                unchanged = previous.digests[at] == _digest(text)
            if not unchanged:
                cols[at] = -1
    found = (rows >= 0) & (cols >= 0)
    r, j = rows[found], cols[found]
    found[found] = inst.mask[r, j] & (inst.tokens[r, j] == previous.tokens[found])
    levels[found] = cols[found]
    return rows, levels


@dataclass(frozen=True)
class Arranged:
    """A turn's prompt order over the instance's rows, and what it kept of the previous one."""

    rows: np.ndarray  # int64: the selected rows in prompt order
    laid: tuple[np.ndarray, np.ndarray]  # the previous records' rows and kept levels (:func:`laid_over`)
    kept: np.ndarray  # bool (m,): each previous record, kept as it was
    intact: int  # the previous records kept at the head, from the first
    prompt: PromptOrder


def arrange(compiled: Compiled, choice: np.ndarray, previous: PromptOrder | None,
            laid: tuple[np.ndarray, np.ndarray] | None = None) -> Arranged:
    """The prompt order of a choice (the selected rows' levels, -1 deleted): the previous records
    kept as they were first, in the previous order; then the others by id."""
    rows, cols = laid if laid is not None else laid_over(compiled, previous)
    kept = cols >= 0  # (a copy)
    kept[kept] = choice[rows[kept]] == cols[kept]
    head = rows[kept]
    selected = np.flatnonzero(choice >= 0)
    fresh = np.ones(len(choice), dtype=bool)
    fresh[head] = False
    rest = selected[fresh[selected]]
    if len(rest) > 1:
        source = compiled.source
        ids = [source[i].id for i in compiled.rows[rest].tolist()]
        rest = rest[np.array(sorted(range(len(ids)), key=ids.__getitem__), dtype=np.int64)]
    ordered = np.concatenate([head, rest]).astype(np.int64)
    at = choice[ordered]
    intact = int(np.argmin(kept)) if not kept.all() else len(kept)
    prompt = PromptOrder(None, None, compiled.instance.tokens[ordered, at],
                         held=Held(compiled.source, compiled.rows[ordered], compiled.levels, at))
    return Arranged(ordered, (rows, cols), kept, intact, prompt)


def order_of(result: Any) -> PromptOrder:
    """A result's selection in prompt order, what the next turn keeps its cache against."""
    if isinstance(result.order, Ordering):
        return result.order.arranged.prompt
    return PromptOrder.of(result.selected, result.prompt_order)


# --- the objective --------------------------------------------------------------------------


def problem(compiled: Compiled, settings: CacheSettings, previous: PromptOrder | None) -> CacheProblem:
    """The cache objective over a compiled instance: the write price per token added to its price,
    the previous prompt laid over its rows, the bonus of each intact prefix."""
    from .solver.cache import CacheProblem

    inst = compiled.instance
    r = rates(settings)
    per_dollar = settings.value_per_dollar * settings.input_price / 1e6  # value of one dollar-per-token
    rows, levels = laid_over(compiled, previous)
    tokens = np.zeros(0, dtype=np.int64) if previous is None else previous.tokens
    bonus = np.zeros(len(rows) + 1)
    if previous is not None:
        prefix = settings.prefix_tokens + np.concatenate([[0], np.cumsum(tokens)]).astype(np.int64)
        bonus = per_dollar * (r.write - r.read) * reused_array(r, prefix)
    priced = type(inst)(inst.tokens, inst.utility, inst.mask, inst.budget,
                        inst.price + per_dollar * r.write, inst.max_records)
    return CacheProblem(priced, rows, levels, bonus, -per_dollar * r.write * settings.prefix_tokens)


def reused_array(r: Rates, prefix: np.ndarray) -> np.ndarray:
    """:func:`reused` of each prefix length (float64)."""
    return np.where(prefix < max(r.min_prefix, 1), 0, prefix // r.block * r.block).astype(np.float64)


# --- the trace ------------------------------------------------------------------------------


@dataclass(frozen=True)
class CacheTrace:
    """What the cache decided this turn: the prefix reused, the first change and why, the cost."""

    provider: str | None  # None: no cache block (ordering only)
    previous: int | None  # records in the previous prompt; None: no previous turn
    kept: int  # previous records kept unchanged, anywhere in the prompt
    prefix_records: int  # the intact prefix: records
    prefix_tokens: int  # … and their tokens
    reused_tokens: int  # read from the cache, as the provider rounds (fixed prefix included)
    first_change: dict[str, Any] | None  # the first previous record not kept, and why
    cost: dict[str, float] | None  # modelled input dollars with the change, without it, with no cache
    cuts: dict[str, int] | None  # the certificate's count of cut points by outcome

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "provider": self.provider, "previous": self.previous, "kept": self.kept,
            "prefix": {"records": self.prefix_records, "tokens": self.prefix_tokens, "reused": self.reused_tokens},
            "first_change": self.first_change,
        }
        if self.cost is not None:
            out["cost"] = self.cost
        if self.cuts is not None:
            out["cuts"] = self.cuts
        return out


def trace(
    compiled: Compiled,
    choice: np.ndarray,
    arranged: Arranged,
    previous: PromptOrder | None,
    settings: CacheSettings | None,
    drop_reason: Callable[[int], str],
    found: CacheSolution | None = None,
    cache_problem: CacheProblem | None = None,
) -> CacheTrace:
    """The turn's cache trace, over the rows: ``arranged`` is the prompt order of ``choice``;
    ``drop_reason(row)`` words why an eligible row was left out; ``found``: the exact solution
    when the cost was in the objective."""
    c = arranged.intact
    m = 0 if previous is None else len(previous)
    kept = int(arranged.kept.sum())
    prefix = 0 if previous is None else int(previous.tokens[:c].sum())
    rows = arranged.rows
    tokens = int(compiled.instance.tokens[rows, choice[rows]].sum())
    r = rates(settings) if settings is not None else Rates(1.0, 1.0, 1, 0)
    fixed = settings.prefix_tokens if settings is not None else 0
    read = reused(r, fixed + prefix) if previous is not None else 0
    change = None
    if previous is not None and c < m:
        was = previous.levels[c]
        row = int(arranged.laid[0][c])
        at = -1 if row < 0 else int(choice[row])
        if at < 0:
            now, reason = "dropped", ("not eligible now (excluded by a rule, invalid or removed)" if row < 0
                                      else drop_reason(row))
        else:
            now = compiled.levels[at]
            reason = (f"now at level {now}" if now != was else "its text changed" if arranged.laid[1][c] < 0
                      else "an earlier record changed, so it moved")
        change = {"id": previous.ids[c], "was": was, "now": now, "reason": reason}
    cost = cuts = None
    if settings is not None:
        cost = {"dollars": dollars(settings, tokens, read), "uncached": dollars(settings, tokens, 0)}
    if found is not None and cache_problem is not None:
        cuts = {k: sum(cut.outcome == k for cut in found.cuts) for k in ("solved", "pruned", "infeasible")}
        alt = found.without
        if change is not None and alt is not None and alt.choice is not None and alt.objective is not None:
            assert settings is not None and cost is not None
            alt_tokens = int(cache_problem.instance.tokens.ravel()[
                np.flatnonzero(alt.choice >= 0) * cache_problem.instance.k + alt.choice[alt.choice >= 0]].sum())
            alt_prefix = cache_problem.prefix_tokens(cache_problem.intact(alt.choice))
            cost["without_change"] = dollars(settings, alt_tokens, reused(r, fixed + alt_prefix))
            change["gain"] = found.solution.objective - alt.objective
            change["objective_without"] = alt.objective
    return CacheTrace(None if settings is None else settings.provider, None if previous is None else m,
                      kept, c, prefix, read, change, cost, cuts)


# --- the pipeline's steps -------------------------------------------------------------------


@dataclass(frozen=True)
class Solved:
    """The cache objective solved over a compiled instance (the ``solve`` and ``check`` stages)."""

    compiled: Compiled  # its instance's price includes the cache's write price per token
    problem: CacheProblem
    found: CacheSolution
    cross_check: Any  # engines.CrossCheck | None
    engine: str


def solve(compiled: Compiled, settings: CacheSettings, previous: PromptOrder | None, engine: str,
          cross_check: str, time_limit_s: float) -> Solved:
    """The exact optimum of the cache objective and its cross-check. The cuts run on the DP engine
    (the compiled kernel) whatever engine is asked for, except greedy (a baseline): CP-SAT per cut
    would cost seconds; CP-SAT remains the cross-check on request."""
    from dataclasses import replace

    from .solver import cache as exact

    prob = problem(compiled, settings, previous)
    cuts_engine = "greedy" if engine == "greedy" else "dp"
    found = exact.solve_cuts(prob, cuts_engine, time_limit_s=time_limit_s)
    verdict = None if engine == "greedy" else exact.cross_check(prob, found, cross_check, time_limit_s=time_limit_s)
    return Solved(replace(compiled, instance=prob.instance), prob, found, verdict, found.solution.engine)


def ordered(result: Any, previous: PromptOrder | None, settings: CacheSettings, solved: Solved,
            allocations: Any) -> Any:
    """The ordering step after the allocation of a policy with a ``cache`` block: the Result with
    its prompt order (over the rows, built when read) and the cache trace (both in its JSON).
    Without the block, the pipeline sets the order alone (``pipeline._arranged``)."""
    from dataclasses import replace

    compiled, choice = allocations.compiled, allocations.choice
    laid = (solved.problem.rows, solved.problem.levels)
    done = Ordering(lambda: arrange(compiled, choice, previous, laid))
    traced = DeferredTrace(lambda: trace(
        compiled, choice, done.arranged, previous, settings,
        lambda row: allocations.drop_reasons(np.array([row], dtype=np.int64))[0], solved.found, solved.problem))
    return replace(result, order=done, cache=traced)


class DeferredTrace:
    """A :class:`CacheTrace` built when first read (``Result.cache``): an agent's turn that only
    puts the prompt together never pays for it. Reads as the trace it stands for."""

    __slots__ = ("_trace",)

    def __init__(self, build: Callable[[], CacheTrace]) -> None:
        self._trace = Lazy(build)

    @property
    def built(self) -> CacheTrace:
        return self._trace.get()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.built, name)

    def to_dict(self) -> dict[str, Any]:
        return self.built.to_dict()

    def __eq__(self, other: object) -> bool:
        return self.built == (other.built if isinstance(other, DeferredTrace) else other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(self.built)
