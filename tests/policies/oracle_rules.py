"""The test oracle: the rule engine as it was before the columns, record by record.

Kept unchanged (but for its imports) so that tests/policies/test_columns.py can check the
vectorised masks of memsolve.policies.rules against it on every example and on random records.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from memsolve.context import ResolvedContext
from memsolve.errors import InputError
from memsolve.policies.model import (
    Duration,
    FreshnessRule,
    LatestKeyRule,
    MaxAgeRule,
    Policy,
    RelevanceRule,
    Rule,
    SessionsRule,
    StoresRule,
    VersionAuthorityRule,
)
from memsolve.policies.verdicts import Ceiling, RecordVerdicts, Verdict, number
from memsolve.records import DELETE, Record
from memsolve.timeutil import RFC3339, TimeValueError, format_time, parse_duration

from ..oracle_relevance import score_records


class Evaluator:
    """The policy and the moment a rule needs: durations in the moment's units, times for evidence."""

    def __init__(self, policy: Policy, context: ResolvedContext) -> None:
        self.policy = policy
        self.ctx = context

    def duration(self, value: Duration | None) -> float | None:
        if value is None:
            return None
        try:
            return parse_duration(value.value, self.ctx.time_kind)
        except TimeValueError as exc:
            raise InputError(str(exc), value.where) from None

    def span(self, seconds_or_units: float) -> float | int | str:
        """A duration for evidence: units as given, or `36h`-style for RFC 3339 times."""
        if self.ctx.time_kind != RFC3339:
            return number(seconds_or_units)
        value = seconds_or_units
        for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
            if value >= size and (value / size).is_integer():
                return f"{int(value // size)}{unit}"
        return f"{number(value)}s"

    def time(self, value: float) -> float | int | str:
        out = format_time(value, self.ctx.time_kind)
        return number(out) if isinstance(out, float) else out


def evaluate(
    policy: Policy,
    records: Sequence[Record],
    context: ResolvedContext,
    ceilings: Mapping[str, Ceiling] | None = None,
) -> list[RecordVerdicts]:
    """Judge every record under every rule; results in input order.

    With ``ceilings`` (a round with state) the last rule is ``fidelity-ceiling``.
    """
    ev = Evaluator(policy, context)
    checks: list[Callable[[Record], Verdict]] = [_tenant(ev)]
    for rule in policy.rules:
        checks.append(_check_for(ev, rule, records))
    if ceilings is not None:
        checks.append(_fidelity_ceiling(ceilings))
    return [RecordVerdicts(r, tuple(check(r) for check in checks)) for r in records]


def _fidelity_ceiling(ceilings: Mapping[str, Ceiling]) -> Callable[[Record], Verdict]:
    def check(record: Record) -> Verdict:
        ceiling = ceilings.get(record.id)
        if ceiling is None:
            return Verdict("fidelity-ceiling", True, "new record: any level", {"ceiling": None})
        evidence = {"ceiling": ceiling.level, "since_round": ceiling.round}
        if ceiling.level == DELETE:
            return Verdict("fidelity-ceiling", False,
                           f"deleted in round {ceiling.round}; returns only with --refresh", evidence)
        return Verdict("fidelity-ceiling", True,
                       f"at most `{ceiling.level}` (set in round {ceiling.round})", evidence)

    return check


def _check_for(ev: Evaluator, rule: Rule, records: Sequence[Record]) -> Callable[[Record], Verdict]:
    if isinstance(rule, StoresRule):
        return _stores(rule)
    if isinstance(rule, SessionsRule):
        return _sessions(ev, rule)
    if isinstance(rule, MaxAgeRule):
        return _max_age(ev, rule)
    if isinstance(rule, FreshnessRule):
        return _freshness(ev, rule)
    if isinstance(rule, VersionAuthorityRule):
        return _version_authority(ev, rule)
    if isinstance(rule, LatestKeyRule):
        return _latest_key(rule, records)
    if isinstance(rule, RelevanceRule):
        return _relevance(ev, rule, records)
    raise AssertionError(type(rule))


def _tenant(ev: Evaluator) -> Callable[[Record], Verdict]:
    tenant = ev.ctx.tenant

    def check(record: Record) -> Verdict:
        evidence = {"tenant": tenant, "record_tenant": record.tenant}
        if tenant is None:
            return Verdict("tenant", True, "no tenant configured; isolation not enforced", evidence)
        if record.tenant is None:
            return Verdict("tenant", False, "record has no tenant (fail closed)", evidence)
        if record.tenant != tenant:
            return Verdict("tenant", False, f"belongs to tenant `{record.tenant}`, not `{tenant}`", evidence)
        return Verdict("tenant", True, f"belongs to tenant `{tenant}`", evidence)

    return check


def _stores(rule: StoresRule) -> Callable[[Record], Verdict]:
    allow = rule.allow

    def check(record: Record) -> Verdict:
        evidence = {"store": record.store, "allow": list(allow)}
        if record.store is None:
            return Verdict(rule.id, False, "record has no store (fail closed)", evidence)
        if record.store not in allow:
            return Verdict(rule.id, False, f"store `{record.store}` is not allowed", evidence)
        return Verdict(rule.id, True, f"store `{record.store}` is allowed", evidence)

    return check


def _sessions(ev: Evaluator, rule: SessionsRule) -> Callable[[Record], Verdict]:
    current = ev.ctx.session
    if not rule.include_previous and current is None:
        raise InputError(
            "this rule keeps only the current session, but no session is given: "
            "pass --session or set `context.session`",
            rule.where,
        )

    def check(record: Record) -> Verdict:
        evidence = {"session": record.session, "current_session": current,
                    "include_previous": rule.include_previous}
        if rule.include_previous:
            return Verdict(rule.id, True, "previous sessions are included", evidence)
        if record.session is None:
            return Verdict(rule.id, False, "record has no session (fail closed)", evidence)
        if record.session != current:
            return Verdict(rule.id, False, f"from session `{record.session}`, not the current `{current}`", evidence)
        return Verdict(rule.id, True, "from the current session", evidence)

    return check


def _max_age(ev: Evaluator, rule: MaxAgeRule) -> Callable[[Record], Verdict]:
    limit = ev.duration(rule.limit)
    assert limit is not None  # the schema requires a value

    def check(record: Record) -> Verdict:
        age = ev.ctx.now - record.timestamp
        evidence = {"age": ev.span(age), "max_age": ev.span(limit)}
        if age <= limit:  # inclusive boundary
            return Verdict(rule.id, True, f"age {ev.span(age)} is within max age {ev.span(limit)}", evidence)
        return Verdict(rule.id, False, f"age {ev.span(age)} exceeds max age {ev.span(limit)}", evidence)

    return check


def _freshness(ev: Evaluator, rule: FreshnessRule) -> Callable[[Record], Verdict]:
    default_ttl = ev.duration(rule.default_ttl)
    by_store = {store: ev.duration(ttl) for store, ttl in rule.ttl_by_store.items()}

    now = ev.time(ev.ctx.now)  # the same for every record

    def check(record: Record) -> Verdict:
        if record.ttl_given:
            ttl, source = record.ttl, "record"
        elif record.store in by_store:
            ttl, source = by_store[record.store], f"store `{record.store}`"
        else:
            ttl, source = default_ttl, "policy default"
        age = ev.ctx.now - record.timestamp
        age_shown = ev.span(age)
        ttl_shown = None if ttl is None else ev.span(ttl)
        evidence = {
            "now": now,
            "timestamp": ev.time(record.timestamp),
            "age": age_shown,
            "ttl": ttl_shown,
            "ttl_from": source,
        }
        if ttl is None:
            return Verdict(rule.id, True, f"never expires (ttl null, from {source})", evidence)
        if age <= ttl:  # inclusive: a record is still fresh at exactly its ttl
            return Verdict(rule.id, True, f"age {age_shown} is within ttl {ttl_shown}", evidence)
        return Verdict(rule.id, False, f"expired: age {age_shown} exceeds ttl {ttl_shown} ({source})", evidence)

    return check


def _version_authority(ev: Evaluator, rule: VersionAuthorityRule) -> Callable[[Record], Verdict]:
    # the context has already reconciled this rule's versions with the caller's and the file's
    versions = dict(ev.ctx.current_versions)
    default = ev.ctx.current_version

    def check(record: Record) -> Verdict:
        current = versions.get(record.document, default) if record.document else default
        evidence = {"authority": record.authority, "document": record.document,
                    "version": record.version, "current_version": current}
        if not record.authority:
            return Verdict(rule.id, True, "not authority-bearing", evidence)
        doc = f" of `{record.document}`" if record.document else ""
        if current is None:
            return Verdict(rule.id, False, f"authority with no known current version{doc} (fail closed)", evidence)
        if record.version != current:
            return Verdict(
                rule.id, False, f"authority bound to {record.version}, current{doc} is {current}", evidence
            )
        return Verdict(rule.id, True, f"authority bound to the current version {current}", evidence)

    return check


def _latest_key(rule: LatestKeyRule, records: Sequence[Record]) -> Callable[[Record], Verdict]:
    # Decided over all the tenant's records before any other filter: a superseded record
    # stays out even when its successor is excluded by another rule (never resurrected).
    latest: dict[tuple[str | None, str], Record] = {}
    tie_at: dict[tuple[str | None, str], float] = {}  # the timestamp at which a group had a tie
    for record in records:
        if record.key is None:
            continue
        group = (record.tenant, record.key)
        best = latest.get(group)
        if best is None or record.timestamp >= best.timestamp:
            if best is not None and record.timestamp == best.timestamp:
                tie_at[group] = record.timestamp
            latest[group] = record

    def check(record: Record) -> Verdict:
        if record.key is None:
            return Verdict(rule.id, True, "record has no key", {"key": None})
        group = (record.tenant, record.key)
        winner = latest[group]
        tie = tie_at.get(group) == winner.timestamp == record.timestamp
        evidence = {"key": record.key, "latest": winner.id, "tie": tie}
        if winner is record:
            reason = f"latest for key `{record.key}`"
            if tie:
                reason += " (timestamp tie won by later input position)"
            return Verdict(rule.id, True, reason, evidence)
        reason = f"superseded by `{winner.id}` for key `{record.key}`"
        if tie:
            reason += " (same timestamp; the later input position wins)"
        return Verdict(rule.id, False, reason, evidence)

    return check


def _relevance(ev: Evaluator, rule: RelevanceRule, records: Sequence[Record]) -> Callable[[Record], Verdict]:
    query = ev.ctx.query
    if not query:
        def no_query(record: Record) -> Verdict:
            return Verdict(rule.id, True, "no query given; relevance not applied", {"query": None})
        return no_query

    half_life = ev.duration(rule.half_life) if rule.half_life is not None else (
        24.0 if ev.ctx.time_kind == "number" else 24 * 3600.0
    )
    assert half_life is not None
    scored = dict(zip((r.position for r in records),
                      score_records(query, records, ev.ctx.now, half_life, rule.recency_weight, rule.scorer),
                      strict=True))
    weight = number(rule.recency_weight)

    def check(record: Record) -> Verdict:
        found = scored[record.position]
        evidence = {"query": query, "scorer": rule.scorer, "similarity": round(found.similarity, 12),
                    "recency": round(found.recency, 12), "recency_weight": weight, "score": found.value}
        if found.similarity <= 0:
            return Verdict(rule.id, False, "shares no term with the query", evidence, found.value)
        reason = f"matches the query (similarity {found.similarity:.3f}, score {found.score:.3f})"
        return Verdict(rule.id, True, reason, evidence, found.value)

    return check
