"""The pipeline: one direction, one function per stage, typed values between them.

    context  Policy, RecordSet, Context      → ResolvedContext   (caller, records file, policy agree)
    scope    RecordSet, tenant               → RecordSet         (the tenant's records; others only counted)
    admit    RecordSet, ResolvedContext      → RecordSet         (records this policy and moment refuse
                                                                  become InvalidRecord)
    rules    RecordSet                       → RecordVerdicts…   (every rule for every valid record)
    compile  eligible records and scores     → Compiled          (the MCKP instance; invert maps back)
    solve    Compiled                        → Solution          (the asked-for engine)
    check    Solution                        → Outcome           (cross-check, feasibility, greedy)
    result   everything above                → Result            (allocations, trace, price)

:func:`run` runs them in order and can time each; :func:`solve` is the one-shot form that returns
the Result. Nothing here prints.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from .context import Context, ResolvedContext, resolve_context
from .errors import InputError, SolverError, shown
from .policies.model import Policy
from .policies.rules import evaluate
from .policies.verdicts import Ceiling, RecordVerdicts, Verdict, number
from .pricing import RoundPrice, next_queue, price_for
from .records import InvalidRecord, Record, RecordSet
from .result import TRACE_MODES, Chosen, Dropped, Excluded, Price, Result, SolverReport, TraceEntry, compression_check
from .solver import dp, engines
from .solver.compile import Allocation, Compiled, compile_records
from .tokens import counter

STAGES = ("context", "scope", "admit", "rules", "compile", "solve", "check", "result")

T = TypeVar("T")


@dataclass
class Timings:
    """Wall-clock seconds per stage, in the order the stages ran (never part of a result)."""

    seconds: dict[str, float] = field(default_factory=dict)

    def time(self, stage: str, step: Callable[[], T]) -> T:
        started = time.perf_counter()
        try:
            return step()
        finally:
            self.seconds[stage] = self.seconds.get(stage, 0.0) + time.perf_counter() - started

    def render(self) -> str:
        return ", ".join(f"{stage} {1000 * s:.1f} ms" for stage, s in self.seconds.items())


@dataclass(frozen=True)
class Prepared:
    """Everything decided before the allocation: context, admission, verdicts, the instance."""

    ctx: ResolvedContext
    admitted: RecordSet  # the tenant's records, those refused at admission marked invalid
    verdicts: tuple[RecordVerdicts, ...]  # the valid records, in input order
    compiled: Compiled
    round_price: RoundPrice
    per_token: float


@dataclass(frozen=True)
class Run:
    """A finished run: what was prepared, the engines' outcome, each record's allocation, the result."""

    prepared: Prepared
    outcome: engines.Outcome
    allocations: tuple[Allocation, ...]  # one per eligible record, in input order
    result: Result

    def allocation_of(self, record_id: str) -> Allocation | None:
        return next((a for a in self.allocations if a.record.id == record_id), None)


# --- the stages -------------------------------------------------------------------------


def scope(records: RecordSet, ctx: ResolvedContext) -> RecordSet:
    """The records this run may see: the tenant's own (all, without a tenant); the rest are only
    counted, so nothing about them reaches any output, and nothing is computed over them."""
    return records.view(ctx.tenant)


def admit(policy: Policy, records: RecordSet, ctx: ResolvedContext) -> RecordSet:
    """Check each record against the policy and the moment; problems become InvalidRecord."""
    derives = policy.utility.source == "relevance"
    out: list[Record | InvalidRecord] = []
    for record in records.records:
        if isinstance(record, InvalidRecord):
            out.append(record)
            continue
        problem = _problem(policy, records, ctx, record, derives)
        out.append(record if problem is None else InvalidRecord(record.id, record.position, problem))
    return replace(records, records=tuple(out))


def rules(
    policy: Policy, admitted: RecordSet, ctx: ResolvedContext, ceilings: Mapping[str, Ceiling] | None
) -> tuple[RecordVerdicts, ...]:
    """Every rule's verdict on every valid record (the first invalid one fails the run under
    ``on_invalid_record: error``)."""
    invalid = admitted.invalid
    if invalid and policy.on_invalid_record == "error":
        raise invalid[0].error
    return tuple(evaluate(policy, admitted.valid, ctx, ceilings))


def compile_stage(
    policy: Policy,
    verdicts: tuple[RecordVerdicts, ...],
    ctx: ResolvedContext,
    per_token: float,
    ceilings: Mapping[str, Ceiling] | None,
) -> Compiled:
    """The instance of the eligible records, utilities derived from their relevance scores."""
    eligible = [v for v in verdicts if v.eligible]
    return compile_records(
        [v.record for v in eligible],
        policy.fidelity,
        ctx.budget,
        per_token,
        ctx.max_records,
        counter(policy.token_counter, policy.locate("tokens", "counter")),
        scores=[v.relevance for v in eligible],
        retention=policy.utility.retention,
        temperature=policy.utility.temperature,
        ceilings=None if ceilings is None else {rid: c.level for rid, c in ceilings.items()},
    )


def result(
    policy: Policy,
    records: RecordSet,
    prep: Prepared,
    outcome: engines.Outcome,
    allocations: tuple[Allocation, ...],
    price: Price,
    trace: str = "full",
) -> Result:
    """The Result: every record in input order with its outcome, verdicts and allocation; the
    trace holds every record's entry, the excluded ones', or none (``trace``, TRACE_MODES)."""
    _check_trace(trace)
    full, excluded_only = trace == "full", trace == "excluded"
    verdicts_at = {v.record.position: v for v in prep.verdicts}
    allocation_at = {a.record.position: a for a in allocations}
    selected, dropped, excluded, entries = [], [], [], []
    # positions count the tenant's records only: a trace must not reveal where other tenants' sit
    for position, item in enumerate(prep.admitted.records):
        if isinstance(item, InvalidRecord):
            reason = item.error.message
            excluded.append(Excluded(item.id, "invalid", reason, position))
            if full or excluded_only:
                evidence = {"location": item.error.location.render(), "path": item.error.path}
                invalid = Verdict("invalid", False, reason, evidence)
                entries.append(TraceEntry(item.id, position, "excluded", (invalid,)))
            continue
        judged = verdicts_at[item.position]
        deciding = judged.deciding
        if deciding is not None:
            excluded.append(Excluded(item.id, deciding.rule, deciding.reason, position))
            if full or excluded_only:
                entries.append(TraceEntry(item.id, position, "excluded", judged.verdicts))
            continue
        allocation = allocation_at[item.position]
        if allocation.selected:
            selected.append(Chosen(item.id, allocation.level, allocation.tokens, allocation.utility, allocation.text))
        else:
            assert allocation.drop_reason is not None
            dropped.append(Dropped(item.id, allocation.drop_reason))
        if full:
            outcome_name = "selected" if allocation.selected else "dropped"
            entries.append(TraceEntry(item.id, position, outcome_name, judged.verdicts, allocation))

    solution = outcome.solution
    greedy_report = None
    if outcome.greedy is not None and solution.engine != "greedy":
        greedy_report = {"objective": outcome.greedy.objective, "loss": solution.objective - outcome.greedy.objective}
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
        selected=tuple(selected),
        dropped=tuple(dropped),
        excluded=tuple(excluded),
        other_tenants=prep.admitted.other_tenants,
        trace=tuple(entries),
        compression=None if actions is None else compression_check(actions.original, actions.compressed),
        trace_mode=trace,
    )


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
    verdicts = clock.time("rules", lambda: rules(policy, admitted, ctx, ceilings))
    rp = round_price or price_for(policy)
    per_token = rp.lam / ctx.budget if ctx.budget > 0 else 0.0
    compiled = clock.time("compile", lambda: compile_stage(policy, verdicts, ctx, per_token, ceilings))
    return Prepared(ctx, admitted, verdicts, compiled, rp, per_token)


def finish(
    policy: Policy,
    records: RecordSet,
    prep: Prepared,
    *,
    engine: str | None = None,
    extra: Mapping[str, Any] | None = None,
    timings: Timings | None = None,
    trace: str = "full",
) -> Run:
    """The stages from the instance on: solve, check, result."""
    clock = timings or Timings()
    job = engines.Job(prep.compiled.instance, policy.solver.time_limit_s, prep.compiled.scores)
    primary = clock.time("solve", lambda: engines.solve(job, engine or policy.solver.engine))
    outcome = clock.time("check", lambda: engines.check(job, primary, policy.solver.cross_check))

    def report() -> tuple[tuple[Allocation, ...], Result]:
        rp, solution = prep.round_price, outcome.solution
        queue_after = next_queue(policy, rp.queue, solution.tokens_used, prep.ctx.budget)
        price = Price(rp.lam, prep.per_token, rp.queue, queue_after)
        allocations = prep.compiled.invert(solution, outcome.reduction, job.scaled.scale)
        done = result(policy, records, prep, outcome, allocations, price, trace)
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
) -> Run:
    """Every stage in order; ``timings`` collects the seconds each took; ``trace`` says which
    records' trace entries the result carries (``full``, ``excluded`` or ``none``)."""
    _check_trace(trace)  # before any work
    with _no_cyclic_collection():
        prep = prepare(policy, records, context, round_price, ceilings, timings)
        return finish(policy, records, prep, engine=engine, extra=extra, timings=timings, trace=trace)


@contextmanager
def _no_cyclic_collection() -> Iterator[None]:
    """Pause the cyclic garbage collector for one run, restoring its state after. A run makes tens
    of thousands of small acyclic objects (verdicts, allocations, trace entries) that reference
    counting frees; the collector rescanning them cost a third of a 10,000-record turn."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


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
            f"unknown store `{record.store}`; the policy declares {', '.join(policy.stores)}",
            at(record.position, "store"),
        )
    for level in record.levels:
        if level.name not in policy.fidelity:
            path = ("representations", level.name) if len(record.levels) > 1 or level.name != "raw" else ()
            return InputError(
                f"level `{level.name}` is not in the policy's fidelity list ({', '.join(policy.fidelity)})",
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
    return None
