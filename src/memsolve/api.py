"""The pipeline: context → admission → rules → compile → solve → result.

Each stage is a plain function taking and returning typed values; nothing here prints.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from .context import Context, ResolvedContext, resolve_context
from .errors import InputError, SolverError
from .policies.model import Policy, RelevanceRule
from .policies.rules import Ceiling, RecordVerdicts, Verdict, evaluate, number
from .records import InvalidRecord, Record, RecordSet
from .result import (
    Chosen,
    Dropped,
    Excluded,
    Price,
    Result,
    SolverReport,
    TraceEntry,
    compression_check,
)
from .solver import dp, engines
from .solver.compile import Compiled, compile_records
from .solver.instance import Solution
from .solver.reduce import Reduction
from .tokens import counter


@dataclass(frozen=True)
class RoundPrice:
    """This round's MemPrice quantities: t, Q_t, λ_t = c·Q_t/√t."""

    round: int
    queue: float
    lam: float


def price_for(policy: Policy, round_: int = 1, queue: float | None = None) -> RoundPrice:
    q = policy.pricing.q0 if queue is None else queue
    return RoundPrice(round_, q, policy.pricing.c * q / math.sqrt(round_))


def next_queue(policy: Policy, queue: float, tokens_used: int, budget: int) -> float:
    """Q_{t+1} = max(0, Q_t + G_t/B − α); with B = 0 the occupancy term is 0."""
    occupancy = tokens_used / budget if budget > 0 else 0.0
    return max(0.0, queue + occupancy - policy.pricing.alpha)


def admit(policy: Policy, records: RecordSet, ctx: ResolvedContext) -> list[Record | InvalidRecord]:
    """Check each record against the policy and the moment; problems become InvalidRecord."""
    derives = policy.utility.source == "relevance"
    out: list[Record | InvalidRecord] = []
    for record in records.records:
        if isinstance(record, InvalidRecord):
            out.append(record)
            continue
        problem = _problem(policy, records, ctx, record, derives)
        out.append(record if problem is None else InvalidRecord(record.id, record.position, problem))
    return out


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


@dataclass(frozen=True)
class Prepared:
    """Everything decided before the allocation: context, admission, verdicts, the instance."""

    ctx: ResolvedContext
    admitted: list[Record | InvalidRecord]
    verdicts: list[RecordVerdicts]
    compiled: Compiled
    round_price: RoundPrice
    per_token: float


def prepare(
    policy: Policy,
    records: RecordSet,
    context: Context | None = None,
    round_price: RoundPrice | None = None,
    ceilings: Mapping[str, Ceiling] | None = None,
) -> Prepared:
    """Run the stages up to the instance: context, admission, rules, compile."""
    ctx = resolve_context(policy, records, context)
    admitted = admit(policy, records, ctx)
    invalid = [r for r in admitted if isinstance(r, InvalidRecord)]
    if invalid and policy.on_invalid_record == "error":
        raise invalid[0].error
    valid = [r for r in admitted if isinstance(r, Record)]
    verdicts = evaluate(policy, valid, ctx, ceilings)
    eligible = [v for v in verdicts if v.eligible]

    rp = round_price or price_for(policy)
    per_token = rp.lam / ctx.budget if ctx.budget > 0 else 0.0
    compiled = compile_records(
        [v.record for v in eligible],
        policy.fidelity,
        ctx.budget,
        per_token,
        ctx.max_records,
        counter(policy.token_counter, policy.locate("tokens", "counter")),
        scores=_scores(policy, eligible),
        retention=policy.utility.retention,
        temperature=policy.utility.temperature,
        ceilings=None if ceilings is None else {rid: c.level for rid, c in ceilings.items()},
    )
    return Prepared(ctx, admitted, verdicts, compiled, rp, per_token)


def solve(
    policy: Policy,
    records: RecordSet,
    context: Context | None = None,
    *,
    engine: str | None = None,
    round_price: RoundPrice | None = None,
    ceilings: Mapping[str, Ceiling] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> Result:
    """Decide which records enter the context, at which level, and why; returns a Result.

    ``round_price`` and ``ceilings`` come from the state store in a stateful round (see
    :class:`memsolve.StateStore`); ``extra`` adds sections to the result (``state``).
    Raises InputError for bad input (or an invalid record under ``on_invalid_record: error``)
    and SolverError when the exact engines disagree.
    """
    return finish(policy, records, prepare(policy, records, context, round_price, ceilings), engine=engine,
                  extra=extra)


def finish(
    policy: Policy,
    records: RecordSet,
    prep: Prepared,
    *,
    engine: str | None = None,
    extra: Mapping[str, Any] | None = None,
) -> Result:
    """Solve a prepared instance and build the Result (the second half of :func:`solve`)."""
    outcome = engines.run(
        prep.compiled.instance,
        engine or policy.solver.engine,
        policy.solver.cross_check,
        time_limit_s=policy.solver.time_limit_s,
        scores=prep.compiled.scores,
    )
    rp, ctx = prep.round_price, prep.ctx
    queue_after = next_queue(policy, rp.queue, outcome.solution.tokens_used, ctx.budget)
    price = Price(rp.lam, prep.per_token, rp.queue, queue_after)
    result = _result(policy, records, prep, price, outcome)
    return replace(result, extra=dict(extra)) if extra else result


def frontier(policy: Policy, records: RecordSet, context: Context | None = None) -> list[tuple[int, float]]:
    """Best objective at every budget 0..B as breakpoints (budget, objective), at this round's price."""
    prep = prepare(policy, records, context)
    try:
        return dp.frontier(prep.compiled.instance)
    except dp.TooLarge as exc:
        raise SolverError(f"frontier needs the DP table: {exc}") from None


def _scores(policy: Policy, eligible: list[RecordVerdicts]) -> dict[str, float] | None:
    ids = {r.id for r in policy.rules if isinstance(r, RelevanceRule)}
    scores = {}
    for entry in eligible:
        for verdict in entry.verdicts:
            if verdict.rule in ids and "score" in verdict.evidence:
                scores[entry.record.id] = float(verdict.evidence["score"])
    return scores or None


def _result(policy: Policy, records: RecordSet, prep: Prepared, price: Price, outcome: engines.Outcome) -> Result:
    ctx, rp, compiled, admitted = prep.ctx, prep.round_price, prep.compiled, prep.admitted
    solution = outcome.solution
    row_of = {record.id: row for row, record in enumerate(compiled.records)}
    verdict_of = {v.record.id: v for v in prep.verdicts}
    selected, dropped, excluded, trace = [], [], [], []
    for item in admitted:
        if isinstance(item, InvalidRecord):
            reason = item.error.message
            excluded.append(Excluded(item.id, "invalid", reason))
            evidence = {"location": item.error.location.render(), "path": item.error.path}
            trace.append(TraceEntry(item.id, item.position, "excluded",
                                    (Verdict("invalid", False, reason, evidence),)))
            continue
        v = verdict_of[item.id]
        rules = v.verdicts
        if not v.eligible:
            deciding = v.deciding
            assert deciding is not None
            excluded.append(Excluded(item.id, deciding.rule, deciding.reason))
            trace.append(TraceEntry(item.id, item.position, "excluded", rules))
            continue
        row = row_of[item.id]
        allocation = _allocation(compiled, solution, row, outcome.reduction)
        repairs = tuple(
            {"level": r.level, "utility_from": r.utility_from, "utility_to": r.utility_to}
            for r in compiled.repairs.get(item.id, ())
        )
        derived = compiled.derived.get(item.id)
        derived_dict = None if derived is None else {
            "from": "relevance", "score": derived.score, "best_score": derived.best_score,
            "temperature": derived.temperature, "sharpened": derived.sharpened,
        }
        level = int(solution.choice[row])
        if level >= 0:
            selected.append(Chosen(item.id, compiled.levels[level],
                                   int(compiled.instance.tokens[row, level]),
                                   float(compiled.instance.utility[row, level])))
            outcome_name = "selected"
        else:
            dropped.append(Dropped(item.id, _drop_reason(compiled, row, solution)))
            outcome_name = "dropped"
        trace.append(TraceEntry(item.id, item.position, outcome_name, rules, allocation, repairs, derived_dict))

    greedy = outcome.greedy
    greedy_report = None
    if greedy is not None and solution.engine != "greedy":
        greedy_report = {"objective": greedy.objective, "loss": solution.objective - greedy.objective}
    check = outcome.cross_check
    cross = None if check is None else {
        "engine": check.engine, "objective": check.objective, "agrees": check.agrees,
        **({"detail": check.detail} if check.detail else {}),
    }
    actions = records.actions
    return Result(
        policy_name=policy.name,
        policy_sha256=policy.sha256,
        records_sha256=records.sha256,
        records_count=len(records.records),
        round=rp.round,
        now=ctx.now_output,
        budget=ctx.budget,
        max_records=ctx.max_records,
        price=price,
        solver=SolverReport(solution.engine, solution.status, solution.bound, cross, greedy_report, solution.detail),
        objective=solution.objective,
        utility=solution.utility,
        tokens_used=solution.tokens_used,
        selected=tuple(selected),
        dropped=tuple(dropped),
        excluded=tuple(excluded),
        trace=tuple(trace),
        compression=None if actions is None else compression_check(actions.original, actions.compressed),
    )


def _allocation(compiled: Compiled, solution: Solution, row: int, reduction: Reduction | None) -> dict[str, Any]:
    inst = compiled.instance
    level = int(solution.choice[row])
    tokens, utility, mask = inst.tokens[row].tolist(), inst.utility[row].tolist(), inst.mask[row].tolist()
    offered = [
        {"level": compiled.levels[j], "tokens": tokens[j], "utility": utility[j],
         "value": utility[j] - inst.price * tokens[j]}
        for j in range(inst.k) if mask[j]
    ]
    out: dict[str, Any] = {"level": compiled.levels[level] if level >= 0 else "delete", "offered": offered}
    if reduction is not None:
        # "bound": no other level can reach the incumbent's value (reduced-cost fixing);
        # "search": the record was in the core that the exact search decided
        out["decided_by"] = "search" if bool(reduction.keep[row].sum() > 1) else "bound"
    return out


def _drop_reason(compiled: Compiled, row: int, solution: Solution) -> str:
    inst = compiled.instance
    offered = inst.mask[row]
    if not offered.any():
        return "no representation offered"
    fits = offered & (inst.tokens[row] <= inst.budget)
    if not fits.any():
        return f"no level fits the budget of {inst.budget} tokens"
    net = inst.net()[row]
    if not (net[fits] > 0).any():
        return f"no level is worth its price ({number(inst.price)} per token)"
    if inst.max_records is not None and solution.count >= inst.max_records:
        return f"not among the best {inst.max_records} records (count limit)"
    return "not worth its tokens within the budget"
