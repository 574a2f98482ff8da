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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .policies.model import CacheSettings
from .result import Chosen
from .solver.cache import CacheProblem, CacheSolution
from .solver.compile import Compiled, level_text


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
class PromptOrder:
    """A turn's selection in prompt order: what the next turn keeps its cache against."""

    placed: tuple[Placed, ...]

    @classmethod
    def of(cls, selected: Iterable[Chosen], order: Sequence[str]) -> PromptOrder:
        by_id = {c.id: c for c in selected}
        return cls(tuple(Placed.of(by_id[i]) for i in order))

    @classmethod
    def from_dicts(cls, items: Iterable[dict[str, Any]]) -> PromptOrder:
        return cls(tuple(Placed(d["id"], d["level"], int(d["tokens"]), d["sha256"]) for d in items))

    def to_list(self) -> list[dict[str, Any]]:
        return [p.to_dict() for p in self.placed]


def _digest(text: str | None) -> str:
    return "" if text is None else hashlib.sha256(text.encode("utf-8")).hexdigest()


def prompt_order(selected: Sequence[Chosen], previous: PromptOrder | None) -> tuple[str, ...]:
    """The ids of ``selected`` in prompt order: those unchanged since ``previous`` first, in its
    order; then the changed and new ones by id (a stable order that carries nothing per turn)."""
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


# --- the objective --------------------------------------------------------------------------


def problem(compiled: Compiled, settings: CacheSettings, previous: PromptOrder | None) -> CacheProblem:
    """The cache objective over a compiled instance: the write price per token added to its price,
    the previous prompt laid over its rows, the bonus of each intact prefix."""
    inst = compiled.instance
    r = rates(settings)
    per_dollar = settings.value_per_dollar * settings.input_price / 1e6  # value of one dollar-per-token
    rows, levels, tokens = _laid_over(compiled, previous)
    bonus = np.zeros(len(rows) + 1)
    if previous is not None:
        prefix = settings.prefix_tokens + np.concatenate([[0], np.cumsum(tokens)]).astype(np.int64)
        bonus = np.array([per_dollar * (r.write - r.read) * reused(r, int(a)) for a in prefix.tolist()])
    priced = type(inst)(inst.tokens, inst.utility, inst.mask, inst.budget,
                        inst.price + per_dollar * r.write, inst.max_records)
    return CacheProblem(priced, rows, levels, bonus, -per_dollar * r.write * settings.prefix_tokens)


def _laid_over(compiled: Compiled, previous: PromptOrder | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row, level column and tokens of each previous record; row or level -1 where it cannot be
    kept as it was (not eligible now, the level not offered, its text or size changed)."""
    placed = () if previous is None else previous.placed
    wanted = {p.id for p in placed}
    row_of = {}
    if wanted:  # only the previous records' rows (one pass over the ids, no Record tuple built)
        source = compiled.source
        row_of = {rid: row for row, i in enumerate(compiled.rows.tolist()) if (rid := source[i].id) in wanted}
    column = {name: j for j, name in enumerate(compiled.levels)}
    rows, levels = np.full(len(placed), -1, dtype=np.int64), np.full(len(placed), -1, dtype=np.int64)
    tokens = np.array([p.tokens for p in placed], dtype=np.int64)
    inst = compiled.instance
    for i, p in enumerate(placed):
        row = row_of.get(p.id)
        if row is None:
            continue
        rows[i] = row
        j = column.get(p.level)
        if (j is not None and inst.mask[row, j] and int(inst.tokens[row, j]) == p.tokens
                and _digest(level_text(compiled.record(row), p.level)) == p.digest):
            levels[i] = j
    return rows, levels, tokens


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
    selected: Sequence[Chosen],
    order: Sequence[str],
    previous: PromptOrder | None,
    settings: CacheSettings | None,
    why_dropped: dict[str, str],
    found: CacheSolution | None = None,
    cache_problem: CacheProblem | None = None,
) -> CacheTrace:
    """The turn's cache trace. ``why_dropped``: the outcome of each previous record that is not
    selected now (its reason); ``found``: the exact solution when the cost was in the objective."""
    c = intact_prefix(order, selected, previous)
    placed = () if previous is None else previous.placed
    now = {s.id: s for s in selected}
    kept = sum(1 for p in placed if p.id in now and Placed.of(now[p.id]) == p)
    prefix = sum(p.tokens for p in placed[:c])
    tokens = sum(s.tokens for s in selected)
    r = rates(settings) if settings is not None else Rates(1.0, 1.0, 1, 0)
    fixed = settings.prefix_tokens if settings is not None else 0
    read = reused(r, fixed + prefix) if previous is not None else 0
    change = None
    if c < len(placed):
        p = placed[c]
        chosen = now.get(p.id)
        change = {"id": p.id, "was": p.level,
                  "now": "dropped" if chosen is None else chosen.level,
                  "reason": _why(p, chosen, why_dropped)}
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
    return CacheTrace(None if settings is None else settings.provider, None if previous is None else len(placed),
                      kept, c, prefix, read, change, cost, cuts)


def _why(placed: Placed, chosen: Chosen | None, why_dropped: dict[str, str]) -> str:
    if chosen is None:
        return why_dropped.get(placed.id, "no longer among the records")
    if chosen.level != placed.level:
        return f"now at level {chosen.level}"
    if Placed.of(chosen) != placed:
        return "its text changed"
    return "an earlier record changed, so it moved"


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


def ordered(result: Any, previous: PromptOrder | None, settings: CacheSettings | None, solved: Solved | None,
            allocations: Any) -> Any:
    """The ordering step after the allocation: the Result with its prompt order, and with the cache
    trace (and both in its JSON) when the policy has a ``cache`` block."""
    from dataclasses import replace

    from .result import Deferred

    order = Deferred(lambda: prompt_order(result.selected, previous))
    if settings is None:  # ordering only: the order in the API and the MCP answer, the JSON as it was
        return replace(result, order=order)
    why: dict[str, str] = {}
    if previous is not None and solved is not None:
        chosen = {c.id for c in result.selected}
        for p, row in zip(previous.placed, solved.problem.rows.tolist(), strict=True):
            if p.id not in chosen:
                why[p.id] = ("not eligible now (excluded by a rule, invalid or removed)" if row < 0
                             else allocations.drop_reason(row))
    traced = trace(result.selected, order, previous, settings, why,
                   None if solved is None else solved.found, None if solved is None else solved.problem)
    return replace(result, order=order, cache=traced)
