"""``memsolve check``: schema validation plus semantic lints with stable codes.

The codes (MS000-MS008), their levels and help texts are in :mod:`memsolve.ci.codes`, the one
table SARIF, the help links and the README are held to. A finding is located at the policy line
it concerns: the rule's entry, the ttl, the budget, the `records:` line.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..context import Context, resolve_context
from ..errors import InputError, MemsolveError
from ..policies.load import load_policy
from ..policies.model import FreshnessRule, MaxAgeRule, Policy, RelevanceRule, SessionsRule, StoresRule
from ..records import RecordSet
from ..timeutil import NUMBER, RFC3339, TimeValueError, parse_duration
from .findings import Finding


def check_policy(path: str, records: RecordSet | None = None, context: Context | None = None) -> list[Finding]:
    """Every finding for one policy file (a passed MS000 when it loads)."""
    try:
        policy = load_policy(path)
    except InputError as error:
        return [Finding("check", f"{path}: schema", False, error.message, "MS000", "error", error.location)]
    findings = [Finding("check", f"{path}: schema", True, code="MS000")]
    findings += _static(policy)
    if records is not None:
        findings += _on_records(policy, records, context)
    return findings


def _static(policy: Policy) -> list[Finding]:
    out = []
    name = policy.file or policy.name
    for rule in policy.rules_of(StoresRule):
        if not rule.allow:
            out.append(Finding("check", f"{name}: {rule.id}", False,
                               "empty allow-list: every record is excluded", "MS003", "error", rule.where))
    for fresh in policy.rules_of(FreshnessRule):
        for limit_rule in policy.rules_of(MaxAgeRule):
            ttls = [("default_ttl", fresh.default_ttl)] + list(fresh.ttl_by_store.items())
            for label, ttl in ttls:
                if ttl is None or limit_rule.limit is None:
                    continue
                longer = _longer(ttl.value, limit_rule.limit.value)
                if longer:
                    out.append(Finding(
                        "check", f"{name}: {fresh.id}", False,
                        f"ttl `{ttl.value}` ({label}) is longer than max_age `{limit_rule.limit.value}`: "
                        f"`{limit_rule.id}` always decides first", "MS002", "warning", ttl.where))
    for rule in policy.rules_of(SessionsRule):
        if not rule.include_previous and policy.context.session is None:
            out.append(Finding("check", f"{name}: {rule.id}", False,
                               "keeps only the current session but the policy names none: every call needs "
                               "--session", "MS005", "warning", rule.where))
    relevance = policy.rules_of(RelevanceRule)
    for rule in relevance:
        if policy.context.query is None:
            out.append(Finding("check", f"{name}: {rule.id}", False,
                               "no query in the policy: the rule is active only when --query is given",
                               "MS006", "note", rule.where))
    if policy.utility.source == "relevance" and not relevance:
        out.append(Finding("check", f"{name}: utility", False,
                           "`utility: {from: relevance}` needs a relevance rule to score records",
                           "MS007", "error", policy.locate("utility", "from")))
    return out


def _longer(ttl: object, limit: object) -> bool:
    kind = NUMBER if isinstance(ttl, (int, float)) and isinstance(limit, (int, float)) else RFC3339
    try:
        return parse_duration(ttl, kind) > parse_duration(limit, kind)
    except TimeValueError:
        return False  # mixed kinds: the solve reports that at its own line


def _on_records(policy: Policy, records: RecordSet, context: Context | None) -> list[Finding]:
    from .. import pipeline

    name = policy.file or policy.name
    try:
        result = pipeline.solve(policy, records, context)
    except MemsolveError as error:
        # e.g. a relevance policy without a query: a fact of the moment, not a policy fault
        message = error.message if isinstance(error, InputError) else str(error)
        return [Finding("check", f"{name}: records", False, f"record lints skipped: {message}", "MS008", "note",
                        policy.locate("records"))]
    out = []
    for rule in policy.rules:
        excluded = sum(1 for t in result.trace for r in t.rules if r.rule == rule.id and not r.passed)
        if excluded == 0:
            out.append(Finding("check", f"{name}: {rule.id}", False,
                               f"excludes nothing on these {len(records.records)} records", "MS001", "warning",
                               rule.where))
    mine = records.view(resolve_context(policy, records, context).tenant)  # never another tenant's sizes
    sizes = [min(level.tokens for level in r.levels if level.tokens is not None)
             for r in mine.valid if any(level.tokens is not None for level in r.levels)]
    if sizes and result.budget < min(sizes):
        out.append(Finding("check", f"{name}: budget", False,
                           f"budget {result.budget} is below the smallest representation of every record "
                           f"({min(sizes)} tokens): nothing can be selected", "MS004", "warning",
                           policy.locate("budget", "tokens")))
    return out


def summary(policies: Sequence[str], findings: Sequence[Finding]) -> str:
    """``check: N policies, N error(s), N warning(s), N note(s)``."""
    bad = [f for f in findings if not f.passed]
    count = {level: sum(1 for f in bad if f.level == level) for level in ("error", "warning", "note")}
    return (f"check: {len(policies)} polic{'y' if len(policies) == 1 else 'ies'}, {count['error']} error(s), "
            f"{count['warning']} warning(s), {count['note']} note(s)")
