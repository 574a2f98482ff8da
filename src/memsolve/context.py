"""Facts of the moment: now, tenant, session, current versions, query, budget.

:class:`Context` is the one definition of these fields: the caller passes one, a records file
may carry one, a policy's ``context:`` block is one, and policy tests and the command-line
flags are derived from its fields. :func:`resolve_context` reconciles the three sources; sources
that give different values are an input error: memsolve never silently prefers one authority
over another.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from .errors import InputError, Location, shown
from .timeutil import (
    NUMBER,
    RFC3339,
    TimeValueError,
    format_time,
    now_seconds,
    parse_timestamp,
    time_kind,
)

if TYPE_CHECKING:  # the policy and records modules build on Context; these are for annotations
    from .policies.model import Policy
    from .records import RecordSet


@dataclass(frozen=True)
class Context:
    """What the caller knows about this moment; every field is optional."""

    now: Any = None
    tenant: str | None = None
    session: str | None = None
    query: str | None = None
    budget: int | None = None
    max_records: int | None = None
    current_version: str | None = None
    current_versions: Mapping[str, str] = field(default_factory=dict)


CONTEXT_FIELDS = tuple(f.name for f in fields(Context))


@dataclass(frozen=True)
class ResolvedContext:
    """The context a solve runs under, every source reconciled."""

    now: float
    now_output: float | str | None  # as given, for the result
    time_kind: str
    budget: int
    max_records: int | None
    tenant: str | None
    session: str | None
    query: str | None
    current_version: str | None
    current_versions: Mapping[str, str]


class _Given:
    """One source's value of a context field (caller, records file or policy); ``where`` is
    called only to word a conflict (locating reads the file again)."""

    __slots__ = ("source", "value", "where")

    def __init__(self, source: str, value: Any, where: Callable[[], Location] | None) -> None:
        self.source, self.value, self.where = source, value, where


def _pick(name: str, given: list[_Given]) -> Any:
    present = [g for g in given if g.value is not None]
    if not present:
        return None
    first = present[0]
    for other in present[1:]:
        if other.value != first.value:
            where = (other.where or first.where or Location)()
            hint = "give it in one place or make them agree"
            if other.source == "the policy":
                hint += " (`--set` edits the policy for one run)"
            raise InputError(
                f"conflicting {name}: {first.source} says `{first.value}`, {other.source} says `{other.value}`; {hint}",
                where,
            )
    return first.value


def resolve_context(policy: Policy, records: RecordSet, context: Context | None) -> ResolvedContext:
    """Reconcile caller, records file and policy; raise InputError on any conflict or gap."""
    ctx = context or Context()
    _check_caller(ctx)
    rc = records.context
    flag, file = "the caller", "the records file"

    def rec(*path: Any) -> Callable[[], Location]:
        return lambda: records.locate(*path)

    def pol(*path: Any) -> Callable[[], Location]:
        return lambda: policy.locate(*path)

    def everywhere(name: str, caller: Any, in_file: Any, in_policy: Any, *policy_path: str) -> Any:
        """The one value caller, records file and policy agree on (None when none gives it)."""
        return _pick(name, [
            _Given(flag, caller, None),
            _Given(file, in_file, rec(name)),
            _Given("the policy", in_policy, pol(*policy_path)),
        ])

    budget = everywhere("budget", ctx.budget, rc.budget, policy.budget.tokens, "budget", "tokens")
    if budget is None:
        raise InputError(
            "no token budget: give --budget, `budget` in the records file, or `budget.tokens` in the policy",
            Location(policy.file),
        )
    # the schemas' "integer" admits 1.0; the solvers need an int (a float failed deep inside them)
    if not _is_count(budget):
        raise InputError(f"budget must be an integer >= 0, got `{budget}`", Location(policy.file))
    max_records = everywhere("max_records", ctx.max_records, rc.max_records, policy.budget.max_records,
                             "budget", "max_records")
    if max_records is not None and not _is_count(max_records):
        raise InputError(f"max_records must be an integer >= 0, got `{max_records}`", Location(policy.file))
    tenant = everywhere("tenant", ctx.tenant, rc.tenant, policy.tenant, "tenant")
    if tenant == "":  # the policy's schema refuses it; the caller and the records file are checked here
        raise InputError("the tenant must not be empty: a run for tenant `` would share the state and the view of "
                         "runs with no tenant; give a name, or no tenant",
                         records.locate("tenant") if rc.tenant == "" else Location(None, path="tenant"))
    session = everywhere("session", ctx.session, rc.session, policy.context.session, "context", "session")
    query = everywhere("query", ctx.query, rc.query, policy.context.query, "context", "query")
    authority_rules = policy.authority_rules
    current_version = _pick(
        "current_version",
        [_Given(flag, ctx.current_version, None), _Given(file, rc.current_version, rec("current_version"))]
        + [
            _Given("the policy", r.current_version, pol(*_rule_path(policy, r), "current_version"))
            for r in authority_rules
        ],
    )
    documents = sorted(
        set(ctx.current_versions)
        | set(rc.current_versions)
        | {d for r in authority_rules for d in r.current_versions}
    )
    current_versions = {}
    for document in documents:
        current_versions[document] = _pick(
            f"current version of `{document}`",
            [
                _Given(flag, ctx.current_versions.get(document), None),
                _Given(file, rc.current_versions.get(document), rec("current_versions", document)),
            ]
            + [
                _Given(
                    "the policy",
                    r.current_versions.get(document),
                    pol(*_rule_path(policy, r), "current_versions", document),
                )
                for r in authority_rules
            ],
        )

    now_raw = everywhere("now", _normal_time(ctx.now), _normal_time(rc.now), _normal_time(policy.context.now),
                         "context", "now")
    kind = records.view(tenant).time_kind()
    if now_raw is None:
        if kind == NUMBER:
            raise InputError(
                "`now` is required when timestamps are plain numbers: give --now, `now` in the "
                "records file, or `context.now` in the policy",
                Location(records.file),
            )
        now, now_output, kind = now_seconds(), None, kind or RFC3339
    else:
        now_kind = time_kind(now_raw)
        if now_kind is None:
            raise InputError(f"`now` must be a number or an RFC 3339 time, got `{shown(now_raw)}`",
                             Location(records.file))
        if kind is not None and now_kind != kind:
            raise InputError(
                f"mixed time kinds: `now` is {now_kind} but the records' timestamps are {kind}",
                Location(records.file),
            )
        try:
            now = parse_timestamp(now_raw)
        except TimeValueError as exc:
            raise InputError(str(exc), Location(records.file)) from None
        kind, now_output = now_kind, now_raw
    if now_output is None:
        now_output = format_time(now, kind)

    return ResolvedContext(
        now=now,
        now_output=now_output,
        time_kind=kind,
        budget=budget,
        max_records=max_records,
        tenant=tenant,
        session=session,
        query=query,
        current_version=current_version,
        current_versions=current_versions,
    )


def _check_caller(ctx: Context) -> None:
    """The caller's own values have the right types (the records file and the policy are checked
    by their schemas): a wrong one is an input error, never a crash further on."""
    for name in ("tenant", "session", "query", "current_version"):
        value = getattr(ctx, name)
        if value is not None and not isinstance(value, str):
            raise InputError(f"{name} must be a string, got `{shown(value)}`")
    for name in ("budget", "max_records"):
        value = getattr(ctx, name)
        if value is not None and not _is_count(value):
            raise InputError(f"{name} must be an integer >= 0, got `{shown(value)}`")
    versions = ctx.current_versions
    if not isinstance(versions, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in versions.items()
    ):
        raise InputError("current_versions must map document names to version strings")


def _is_count(value: Any) -> bool:
    """An int >= 0 (not a bool, not a float however whole)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _normal_time(value: Any) -> Any:
    """Times compare by meaning: YAML datetimes and strings for the same instant agree."""
    if value is None or isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    try:
        return format_time(parse_timestamp(value), RFC3339)
    except TimeValueError:
        return value


def _rule_path(policy: Policy, rule: Any) -> tuple[Any, ...]:
    index = policy.rules.index(rule)
    return ("rules", index, rule.type)
