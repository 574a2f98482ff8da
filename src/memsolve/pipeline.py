"""The pipeline: one direction, one function per stage, typed values between them.

    context  Policy, RecordSet, Context      → ResolvedContext   (caller, records file, policy agree)
    scope    RecordSet, tenant               → RecordSet         (the tenant's records; others only counted)
    admit    RecordSet, ResolvedContext      → RecordSet         (records this policy and moment refuse
                                                                  become InvalidRecord)
    rules    RecordSet                       → Judgement         (every rule for every valid record, as
                                                                  masks over the record columns)
    compile  eligible records and scores     → Compiled          (the MCKP instance; invert maps back)
    solve    Compiled                        → Solution          (the asked-for engine)
    check    Solution                        → Outcome           (cross-check, feasibility, greedy)
    result   everything above                → Result            (allocations, trace, price)

:func:`run` runs them in order and can time each; :func:`solve` is the one-shot form that returns
the Result. Nothing here prints.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from . import collection
from .columns import ABSENT, LevelTable
from .context import Context, ResolvedContext, resolve_context
from .errors import InputError, SolverError, shown
from .policies.model import Policy, RelevanceRule
from .policies.rules import evaluate
from .policies.verdicts import Ceiling, Judgement, Verdict, number
from .pricing import RoundPrice, next_queue, price_for
from .records import InvalidRecord, Record, RecordSet
from .result import (
    TRACE_MODES,
    Chosen,
    Deferred,
    Dropped,
    Excluded,
    GreedyReport,
    Ordering,
    Price,
    Result,
    SolverReport,
    Trace,
    TraceEntry,
    compression_check,
    json_text,
)
from .solver import Solution, dp, engines
from .solver.compile import Allocations, Compiled, compile_rows, level_text
from .tokens import counter
from .trace_json import excluded_lines, selected_lines, trace_lines

if TYPE_CHECKING:  # the cache module is imported when a round has a cache block or reads its prompt order
    from . import cache

STAGES = ("context", "scope", "admit", "rules", "compile", "solve", "check", "result")

T = TypeVar("T")


class Timings:
    """Wall-clock seconds per stage, in the order the stages ran (never part of a result)."""

    __slots__ = ("seconds",)

    def __init__(self, seconds: dict[str, float] | None = None) -> None:
        self.seconds: dict[str, float] = {} if seconds is None else seconds

    def time(self, stage: str, step: Callable[[], T]) -> T:
        started = time.perf_counter()
        try:
            return step()
        finally:
            self.seconds[stage] = self.seconds.get(stage, 0.0) + time.perf_counter() - started

    def render(self) -> str:
        return ", ".join(f"{stage} {1000 * s:.1f} ms" for stage, s in self.seconds.items())


class Prepared:
    """Everything decided before the allocation: context, admission, verdicts, the instance.

    ``admitted``: the tenant's records, those refused at admission marked invalid; ``judgement``:
    every rule over the admitted records' columns; ``eligible``: the columns' rows that passed
    every rule (row r of the instance is ``eligible[r]``). (The internal values of this module
    are plain classes: a dataclass costs ~0.7 ms to create at import, in every CLI process.)"""

    __slots__ = ("ctx", "admitted", "judgement", "eligible", "compiled", "round_price", "per_token")

    def __init__(self, ctx: ResolvedContext, admitted: RecordSet, judgement: Judgement, eligible: np.ndarray,
                 compiled: Compiled, round_price: RoundPrice, per_token: float) -> None:
        self.ctx, self.admitted, self.judgement, self.eligible = ctx, admitted, judgement, eligible
        self.compiled, self.round_price, self.per_token = compiled, round_price, per_token

    def with_compiled(self, compiled: Compiled) -> Prepared:
        return Prepared(self.ctx, self.admitted, self.judgement, self.eligible, compiled, self.round_price,
                        self.per_token)


class Run:
    """A finished run: what was prepared, the engines' outcome, each record's allocation (one per
    eligible record, in input order), the result."""

    __slots__ = ("prepared", "outcome", "allocations", "result")

    def __init__(self, prepared: Prepared, outcome: engines.Outcome, allocations: Allocations,
                 result: Result) -> None:
        self.prepared, self.outcome, self.allocations, self.result = prepared, outcome, allocations, result


# --- the stages -------------------------------------------------------------------------


def scope(records: RecordSet, ctx: ResolvedContext) -> RecordSet:
    """The records this run may see: the tenant's own (all, without a tenant); the rest are only
    counted, so nothing about them reaches any output, and nothing is computed over them."""
    return records.view(ctx.tenant)


def admit(policy: Policy, records: RecordSet, ctx: ResolvedContext) -> RecordSet:
    """Check each record against the policy and the moment; problems become InvalidRecord.
    The checks run over the columns; only a record that fails one is looked at on its own."""
    cols = records.columns
    derives = policy.utility.source == "relevance"
    deriving = bool(derives and ctx.query and _scores_relevance(policy))

    def refusable() -> np.ndarray:
        """Rows the policy refuses whatever the moment: unknown store or level, no utility."""
        table = _levels(policy, records)
        out = table.unknown | ((cols.store.codes != ABSENT) & ~cols.store.isin(policy.stores))
        return out if deriving else out | table.missing_utility

    key = ("admit", tuple(policy.stores), tuple(policy.fidelity), policy.token_counter, deriving)
    suspect = cols.memo(key, refusable) | (cols.timestamp > ctx.now)
    refused = {}
    for row in np.flatnonzero(suspect).tolist():
        record = cols.records[row]
        problem = _problem(policy, records, ctx, record, derives)
        if problem is not None:
            refused[row] = InvalidRecord(record.id, record.position, problem)
    if ctx.tenant is None:
        # no tenant in force: every tenant's records are this run's, and its output, its state (fidelity
        # ceilings, the prompt order) and its prompt know a record by id; an id an earlier record has
        # (another tenant's: ids are unique within a tenant on load) is that record's input error
        for row in cols.memo(("ids of earlier records",), lambda: _repeated_ids(records)):
            record = cols.records[row]
            refused.setdefault(row, InvalidRecord(record.id, record.position, InputError(
                f"record id `{shown(record.id)}` is also an earlier record's: with no tenant in force a run's ids "
                "must be unique (give a tenant to run one tenant's records)",
                records.locate_field(record.position, "id")), record.tenant))
    return records.refused(refused) if refused else records


def _repeated_ids(records: RecordSet) -> list[int]:
    """The column rows whose record id an earlier record has: valid or not (one refused on load
    keeps its id in the output too), admitted or not."""
    seen: set[str | None] = set()
    repeated, row = [], 0
    for record in records.records:
        if isinstance(record, Record):  # the columns hold the valid records, in order
            if record.id in seen:
                repeated.append(row)
            row += 1
        if record.id is not None:
            seen.add(record.id)
    return repeated


def rules(
    policy: Policy, admitted: RecordSet, ctx: ResolvedContext, ceilings: Mapping[str, Ceiling] | None
) -> Judgement:
    """Every rule's verdict on every valid record (the first invalid one fails the run under
    ``on_invalid_record: error``)."""
    if len(admitted.columns) < len(admitted.records) and policy.on_invalid_record == "error":
        raise admitted.invalid[0].error
    return evaluate(policy, admitted.columns, ctx, ceilings)


def compile_stage(
    policy: Policy,
    admitted: RecordSet,
    judgement: Judgement,
    eligible: np.ndarray,
    ctx: ResolvedContext,
    per_token: float,
    ceilings: Mapping[str, Ceiling] | None,
) -> Compiled:
    """The instance of the eligible records, utilities derived from their relevance scores
    (or from the policy's utility model, DESIGN §11)."""
    model = None
    if policy.utility.model is not None and ctx.query and _scores_relevance(policy):
        from .utility_model import model_inputs

        rule = policy.rules_of(RelevanceRule)[-1]
        model = model_inputs(policy.utility.model, judgement.columns, policy.fidelity, ctx.query, rule.scorer,
                             ctx.now, ctx.time_kind, policy.utility.retention)
    return compile_rows(
        _levels(policy, admitted),
        eligible,
        judgement.columns.records,
        ctx.budget,
        per_token,
        ctx.max_records,
        scores=judgement.relevance,
        retention=policy.utility.retention,
        temperature=policy.utility.temperature,
        ceilings=None if ceilings is None else {rid: c.level for rid, c in ceilings.items()},
        model=model,
    )


def _levels(policy: Policy, records: RecordSet) -> LevelTable:
    return records.columns.levels(policy.fidelity, policy.token_counter,
                                  lambda: counter(policy.token_counter, policy.locate("tokens", "counter")))


def result(
    policy: Policy,
    records: RecordSet,
    prep: Prepared,
    outcome: engines.Outcome,
    allocations: Allocations,
    price: Price,
    trace: str = "full",
) -> Result:
    """The Result: every record in input order with its outcome, verdicts and allocation; the
    trace holds every record's entry, the excluded ones', or none (``trace``, TRACE_MODES).
    The record lists are built when first read (:class:`Outcomes`)."""
    _check_trace(trace)
    outcomes = Outcomes(prep, allocations, trace)
    solution = outcome.solution
    greedy_report = None
    if outcome.baseline is not None and solution.engine != "greedy":
        greedy_report = GreedyReport(lambda: _objective(outcome.greedy), solution.objective)
    verdict = outcome.cross_check
    cross = None if verdict is None else {
        "engine": verdict.engine, "objective": verdict.objective, "agrees": verdict.agrees,
        **({"detail": verdict.detail} if verdict.detail else {}),
    }
    ctx, actions = prep.ctx, records.actions
    return Result(
        policy_name=policy.name,
        policy_sha256=policy.sha256,
        records_sha256=records.sha256,
        records_count=prep.admitted.count,
        round=prep.round_price.round,
        now=ctx.now_output,
        budget=ctx.budget,
        max_records=ctx.max_records,
        price=price,
        solver=SolverReport(outcome.engine, solution.engine, solution.status, solution.bound, cross, greedy_report,
                            solution.detail),
        objective=solution.objective,
        utility=solution.utility,
        tokens_used=solution.tokens_used,
        selected=Deferred(outcomes.selected, outcomes.selected_json),
        dropped=Deferred(outcomes.dropped),
        excluded=Deferred(outcomes.excluded, outcomes.excluded_json),
        other_tenants=prep.admitted.other_tenants,
        trace=Trace(outcomes.trace, outcomes.trace_json),
        compression=None if actions is None else compression_check(actions.original, actions.compressed),
        trace_mode=trace,
    )


def _objective(solution: Solution | None) -> float:
    assert solution is not None  # a baseline was asked for
    return solution.objective


class Outcomes:
    """Each record's outcome, read off the judgement and the allocations when asked for.

    Positions count the tenant's records only: a trace must not reveal where other tenants' sit.
    """

    def __init__(self, prep: Prepared, allocations: Allocations, trace: str) -> None:
        self.prep, self.allocations, self.trace_mode = prep, allocations, trace

    def selected(self) -> Iterator[Chosen]:
        compiled, choice = self.prep.compiled, self.allocations.choice
        inst, levels = compiled.instance, compiled.levels
        rows = np.flatnonzero(choice >= 0)
        at = choice[rows]
        source = compiled.rows[rows].tolist()  # each row's record, among the compiled records' source
        for i, j, tokens, utility in zip(source, at.tolist(), inst.tokens[rows, at].tolist(),
                                         inst.utility[rows, at].tolist(), strict=True):
            record = compiled.source[i]
            yield Chosen(record.id, levels[j], tokens, utility, level_text(record, levels[j]))

    def dropped(self) -> Iterator[Dropped]:
        compiled = self.prep.compiled
        rows = np.flatnonzero(self.allocations.choice < 0)
        for row, reason in zip(rows.tolist(), self.allocations.drop_reasons(rows), strict=True):
            yield Dropped(compiled.record(row).id, reason)

    def excluded(self) -> Iterator[Excluded]:
        for position, item, row in self._walk(eligible=False):
            if row is None:
                yield Excluded(item.id, "invalid", item.error.message, position)
            else:
                rule, reason = self.prep.judgement.deciding_reason(row)
                yield Excluded(item.id, rule, reason, position)

    def _instance_rows(self) -> np.ndarray:
        """Each column row's row in the instance (-1: not eligible)."""
        instance_row = np.full(len(self.prep.judgement.eligible), -1)
        instance_row[self.prep.eligible] = np.arange(len(self.prep.eligible))
        return instance_row

    @staticmethod
    def _invalid(position: int, item: InvalidRecord) -> TraceEntry:
        evidence = {"location": item.error.location.render(), "path": item.error.path}
        return TraceEntry(item.id, position, "excluded", (Verdict("invalid", False, item.error.message, evidence),))

    def selected_json(self) -> list[str] | None:
        """The selected records' JSON, written from the arrays (memsolve.trace_json)."""
        return selected_lines(self.allocations, self.prep.judgement.columns)

    def excluded_json(self) -> list[str]:
        """The excluded records' JSON, written from the arrays (memsolve.trace_json)."""
        judgement = self.prep.judgement
        return excluded_lines(judgement, np.flatnonzero(~judgement.eligible), self._invalid_records())

    def trace_json(self) -> list[str] | None:
        """The trace entries' JSON, written from the arrays (memsolve.trace_json)."""
        if self.trace_mode == "none":
            return []
        judgement = self.prep.judgement
        rows = np.arange(len(judgement.eligible)) if self.trace_mode == "full" else np.flatnonzero(~judgement.eligible)
        return trace_lines(judgement, self.allocations, rows, self._instance_rows(), self._invalid_records(),
                           lambda position, item: json_text(self._invalid(position, item).to_dict()))

    def _invalid_records(self) -> list[tuple[int, InvalidRecord]]:
        """(position, record) of the invalid records among the admitted ones (the columns hold
        the valid ones only)."""
        items = self.prep.admitted.records
        if len(self.prep.judgement.columns) == len(items):
            return []
        return [(position, item) for position, item in enumerate(items) if isinstance(item, InvalidRecord)]

    def trace(self) -> Iterator[TraceEntry]:
        if self.trace_mode == "none":
            return
        judgement = self.prep.judgement
        instance_row = self._instance_rows()
        shown = self._walk(eligible=self.trace_mode == "full")
        # every rule's verdicts on the shown rows at once (rows that share a verdict share one
        # object), and the eligible rows' allocations
        verdicts = iter(judgement.verdict_rows([row for _, _, row in shown if row is not None]))
        eligible = [row for _, _, row in shown if row is not None and judgement.eligible[row]]
        allocations = iter(self.allocations.of_rows(instance_row[eligible].tolist()))
        for position, item, row in shown:
            if row is None:
                yield self._invalid(position, item)
            elif not judgement.eligible[row]:
                yield TraceEntry(item.id, position, "excluded", next(verdicts))
            else:
                allocation = next(allocations)
                outcome_name = "selected" if allocation.selected else "dropped"
                yield TraceEntry(item.id, position, outcome_name, next(verdicts), allocation)

    def _walk(self, eligible: bool) -> list[tuple[int, Any, int | None]]:
        """(position, record, column row) of the admitted records in input order: the invalid
        ones (row None), the excluded ones and, with ``eligible``, the eligible ones too."""
        judgement = self.prep.judgement
        items = self.prep.admitted.records
        shown_rows = np.arange(len(judgement.eligible)) if eligible else np.flatnonzero(~judgement.eligible)
        at = judgement.columns.index[shown_rows].tolist()  # their positions among the tenant's records
        shown: list[tuple[int, Any, int | None]] = list(zip(at, map(items.__getitem__, at), shown_rows.tolist(),
                                                            strict=True))
        if len(judgement.columns) == len(items):
            return shown
        shown += [(position, item, None) for position, item in enumerate(items) if isinstance(item, InvalidRecord)]
        return sorted(shown, key=lambda entry: entry[0])


# --- running them -----------------------------------------------------------------------


def prepare(
    policy: Policy,
    records: RecordSet,
    context: Context | None = None,
    round_price: RoundPrice | None = None,
    ceilings: Mapping[str, Ceiling] | None = None,
    timings: Timings | None = None,
) -> Prepared:
    """The stages up to the instance: context, admit, rules, compile."""
    clock = timings or Timings()
    ctx = clock.time("context", lambda: resolve_context(policy, records, context))
    view = clock.time("scope", lambda: scope(records, ctx))
    admitted = clock.time("admit", lambda: admit(policy, view, ctx))
    judgement = clock.time("rules", lambda: rules(policy, admitted, ctx, ceilings))
    rp = round_price or price_for(policy)
    per_token = rp.lam / ctx.budget if ctx.budget > 0 else 0.0
    eligible = np.flatnonzero(judgement.eligible)
    compiled = clock.time("compile", lambda: compile_stage(policy, admitted, judgement, eligible, ctx, per_token,
                                                           ceilings))
    return Prepared(ctx, admitted, judgement, eligible, compiled, rp, per_token)


def finish(
    policy: Policy,
    records: RecordSet,
    prep: Prepared,
    *,
    engine: str | None = None,
    extra: Mapping[str, Any] | None = None,
    timings: Timings | None = None,
    trace: str = "full",
    previous: cache.PromptOrder | None = None,
) -> Run:
    """The stages from the instance on: solve, check, result; then the prompt order (DESIGN §15:
    with a ``cache`` block the cuts solve the cache objective against ``previous``, the previous
    turn's prompt order)."""
    clock = timings or Timings()
    solved = None
    if policy.cache is not None:
        from . import cache

        solved = clock.time("solve", lambda: cache.solve(prep.compiled, policy.cache, previous,
                                                         engine or policy.solver.engine, policy.solver.cross_check,
                                                         policy.solver.time_limit_s))
        prep = prep.with_compiled(solved.compiled)
        outcome = engines.Outcome(solved.found.solution, solved.engine, solved.cross_check, None)
        scale = solved.found.scale
    else:
        job = engines.Job(prep.compiled.instance, policy.solver.time_limit_s, prep.compiled.scores)
        primary = clock.time("solve", lambda: engines.solve(job, engine or policy.solver.engine))
        outcome = clock.time("check", lambda: engines.check(job, primary, policy.solver.cross_check))
        scale = job.scaled.scale

    def report() -> tuple[Allocations, Result]:
        rp, solution = prep.round_price, outcome.solution
        queue_after = next_queue(policy, rp.queue, solution.tokens_used, prep.ctx.budget)
        price = Price(rp.lam, prep.per_token, rp.queue, queue_after)
        allocations = prep.compiled.invert(solution, outcome.reduction, scale)
        done = result(policy, records, prep, outcome, allocations, price, trace)
        if policy.cache is None:  # the prompt order, arranged when read (as cache.ordered has it)
            compiled, choice = allocations.compiled, allocations.choice
            done = replace(done, order=Ordering(lambda: _arranged(compiled, choice, previous)))
        else:
            done = cache.ordered(done, previous, policy.cache, solved, allocations)
        return allocations, replace(done, extra=dict(extra)) if extra else done

    allocations, final = clock.time("result", report)
    return Run(prep, outcome, allocations, final)


def run(
    policy: Policy,
    records: RecordSet,
    context: Context | None = None,
    *,
    engine: str | None = None,
    round_price: RoundPrice | None = None,
    ceilings: Mapping[str, Ceiling] | None = None,
    extra: Mapping[str, Any] | None = None,
    timings: Timings | None = None,
    trace: str = "full",
    previous: cache.PromptOrder | None = None,
) -> Run:
    """Every stage in order; ``timings`` collects the seconds each took; ``trace`` says which
    records' trace entries the result carries (``full``, ``excluded`` or ``none``); ``previous``
    is the previous turn's prompt order (DESIGN §15), which the prompt order keeps stable."""
    _check_trace(trace)  # before any work
    with collection.paused():
        prep = prepare(policy, records, context, round_price, ceilings, timings)
        return finish(policy, records, prep, engine=engine, extra=extra, timings=timings, trace=trace,
                      previous=previous)


def solve(policy: Policy, records: RecordSet, context: Context | None = None, **options: Any) -> Result:
    """Decide which records enter the context, at which level, and why; returns a Result.

    ``options`` are :func:`run`'s: ``engine`` overrides the policy's; ``round_price`` and
    ``ceilings`` come from the state store in a stateful round (see :class:`memsolve.StateStore`);
    ``extra`` adds sections to the result (``state``); ``trace`` how much trace it carries.
    Raises InputError for bad input (or an
    invalid record under ``on_invalid_record: error``) and SolverError when the exact engines
    disagree.
    """
    return run(policy, records, context, **options).result


def frontier(policy: Policy, records: RecordSet, context: Context | None = None) -> list[tuple[int, float]]:
    """Best objective at every budget 0..B as breakpoints (budget, objective), at this round's price."""
    prep = prepare(policy, records, context)
    try:
        return dp.frontier(prep.compiled.instance)
    except dp.TooLarge as exc:
        raise SolverError(f"frontier needs the DP table: {exc}") from None


def _arranged(compiled: Compiled, choice: np.ndarray, previous: cache.PromptOrder | None) -> cache.Arranged:
    from . import cache  # a turn that never reads its prompt order never imports it

    return cache.arrange(compiled, choice, previous)


def _check_trace(trace: str) -> None:
    if trace not in TRACE_MODES:
        raise InputError(f"unknown trace mode `{shown(trace)}`; expected one of {', '.join(TRACE_MODES)}")


def _problem(
    policy: Policy, records: RecordSet, ctx: ResolvedContext, record: Record, derives: bool
) -> InputError | None:
    at = records.locate_field
    if record.timestamp > ctx.now:
        return InputError(
            f"timestamp is later than now ({number(record.timestamp)} > {number(ctx.now)})"
            if ctx.time_kind == "number" else "timestamp is later than now",
            at(record.position, "timestamp"),
        )
    if record.store is not None and record.store not in policy.stores:
        return InputError(
            f"unknown store `{shown(record.store)}`; the policy declares {', '.join(policy.stores)}",
            at(record.position, "store"),
        )
    for level in record.levels:
        if level.name not in policy.fidelity:
            path = ("representations", level.name) if len(record.levels) > 1 or level.name != "raw" else ()
            return InputError(
                f"level `{shown(level.name)}` is not in the policy's fidelity list ({', '.join(policy.fidelity)})",
                at(record.position, *path),
            )
        if level.utility is None and not derives:
            return InputError(
                "no utility given, and the policy does not derive one (`utility: {from: relevance}`)",
                at(record.position),
            )
        if level.utility is None and not ctx.query:
            return InputError(
                "no utility given; deriving it from relevance needs a query (--query)", at(record.position)
            )
        if level.utility is None and not _scores_relevance(policy):
            return InputError(
                "no utility given; deriving it from relevance needs a `relevance` rule in the policy",
                at(record.position),
            )
    return None


def _scores_relevance(policy: Policy) -> bool:
    return any(isinstance(rule, RelevanceRule) for rule in policy.rules)
