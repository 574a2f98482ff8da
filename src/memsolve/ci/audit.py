"""Audit: compare a result's outcomes with a stored baseline, and re-check the invariants.

An outcome is what happened to one record: ``selected`` (with its level), ``dropped``, or
``excluded`` (with the deciding rule). The invariants are checked from the records and the
context themselves, not from the trace, so a bug in a rule cannot hide its own violation:
no selected or dropped record of another tenant, no selected authority record whose version
is not current, no selected record past its ttl, budget and count respected.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..context import Context, resolve_context
from ..errors import InputError, Location
from ..policies.model import FreshnessRule, Policy
from ..records import Record, RecordSet
from ..result import Result, describe_outcome, outcome_key
from ..source import load_document
from ..timeutil import parse_duration
from .findings import Finding

BASELINE_SCHEMA = "memsolve/baseline/v1"


def baseline(result: Result) -> dict[str, Any]:
    return {
        "schema": BASELINE_SCHEMA,
        "policy": {"name": result.policy_name, "sha256": result.policy_sha256},
        "records": {"sha256": result.records_sha256, "count": result.records_count},
        "outcomes": {rid: value for rid, value in sorted(result.outcomes().items())},
    }


def load_baseline(path: str) -> dict[str, Any]:
    doc, _ = load_document(path, fmt="json")
    data = doc.data
    if not isinstance(data, dict) or data.get("schema") != BASELINE_SCHEMA or not isinstance(
        data.get("outcomes"), dict
    ):
        raise InputError(f"not a memsolve baseline (expected `schema: {BASELINE_SCHEMA}` and `outcomes`)",
                         doc.locate(()))
    return data


def compare(policy: Policy, stored: Mapping[str, Any], result: Result,
            records: RecordSet | None = None, tenant: str | None = None) -> list[Finding]:
    """One finding per record: passed when its outcome is unchanged; located at the rule that
    decided it, or (an allocation change, no rule) at the record's own line in ``records``."""
    before: Mapping[str, Any] = stored["outcomes"]
    after = result.outcomes()
    lines = {} if records is None else {
        r.id: records.locate_field(r.position, "id") for r in records.valid if tenant is None or r.tenant == tenant
    }
    findings = []
    for rid in sorted(set(before) | set(after)):
        old, new = before.get(rid), after.get(rid)
        same = old is not None and new is not None and outcome_key(old) == outcome_key(new)
        message = "" if same else f"{describe_outcome(old)} -> {describe_outcome(new)}"
        if not same and new is not None and new.get("reason"):
            message += f" ({new['reason']})"
        rule = (new or {}).get("rule") or (old or {}).get("rule")
        findings.append(Finding(
            "audit", rid, same, message, code="changed-outcome" if old and new else "new-or-missing-record",
            location=_rule_location(policy, rule) or lines.get(rid) or policy.locate(),
            data={"before": old, "after": new},
        ))
    return findings


def _rule_location(policy: Policy, rule_id: str | None) -> Location | None:
    """The policy line of a rule (None for no rule, or one the policy does not write, such as
    `invalid`: the record's own line says more)."""
    for rule in policy.rules:
        if rule.id == rule_id:
            return rule.where
    if rule_id == "tenant":
        return policy.locate("tenant")
    return None


def invariants(policy: Policy, records: RecordSet, context: Context | None, result: Result) -> list[Finding]:
    """The safety invariants, re-derived from the records; a finding per invariant."""
    ctx = resolve_context(policy, records, context)
    # the tenant's records, read from the input itself (not from the run's own view)
    mine: dict[str, Record] = {}
    for record in records.valid:
        if ctx.tenant is None or record.tenant == ctx.tenant:
            mine.setdefault(record.id, record)
    kept_ids = [s.id for s in result.selected] + [d.id for d in result.dropped]
    selected = [(mine[s.id], s) for s in result.selected if s.id in mine]
    checks: list[tuple[str, str, list[str], Location]] = []

    if ctx.tenant is not None:
        # an id the tenant has no record for was taken from another tenant (its id is not shown)
        bad = ["a record outside the tenant" for rid in kept_ids if rid not in mine]
        checks.append(("invariant-tenant", f"only tenant `{ctx.tenant}` records are considered", bad,
                       policy.locate("tenant")))
    stale = []
    for record, _ in selected:
        if record.authority:
            current = ctx.current_versions.get(record.document, ctx.current_version) if record.document \
                else ctx.current_version
            if current is None or record.version != current:
                stale.append(record.id)
    if any(r.authority for r, _ in selected) or stale:
        authority = policy.authority_rules
        checks.append(("invariant-authority", "selected authority records carry the current version", stale,
                       authority[0].where if authority else policy.locate()))
    for rule in policy.rules_of(FreshnessRule):
        expired = [r.id for r, _ in selected if _expired(rule, r, ctx.now, ctx.time_kind)]
        checks.append(("invariant-freshness", f"no selected record is past its ttl ({rule.id})", expired,
                       rule.where))
    used = sum(s.tokens for _, s in selected)
    over = [] if used <= ctx.budget and used == result.tokens_used else [f"{used} tokens of {ctx.budget}"]
    checks.append(("invariant-budget", "the token budget holds", over, policy.locate("budget", "tokens")))
    if ctx.max_records is not None:
        count = [] if len(selected) <= ctx.max_records else [f"{len(selected)} records of {ctx.max_records}"]
        checks.append(("invariant-count", "the record count limit holds", count,
                       policy.locate("budget", "max_records")))
    return [
        Finding("invariants", code, not bad, "" if not bad else f"violated by {', '.join(bad)}", code=code,
                location=where)
        for code, _, bad, where in checks
    ]


def _expired(rule: FreshnessRule, record: Record, now: float, kind: str) -> bool:
    # an independent re-derivation of the ttl (record, then store, then default)
    if record.ttl_given:
        ttl = record.ttl
    elif record.store in rule.ttl_by_store:
        spec = rule.ttl_by_store[record.store]
        ttl = None if spec is None else parse_duration(spec.value, kind)
    else:
        ttl = None if rule.default_ttl is None else parse_duration(rule.default_ttl.value, kind)
    return ttl is not None and now - record.timestamp > ttl


@dataclass(frozen=True)
class AuditReport:
    """The findings of one audit: changed outcomes (with a baseline) first, then the invariants."""

    findings: list[Finding]

    @property
    def failed(self) -> list[Finding]:
        return [f for f in self.findings if not f.passed]

    @property
    def summary(self) -> str:
        changed = sum(1 for f in self.failed if f.suite == "audit")
        broken = sum(1 for f in self.failed if f.suite == "invariants")
        return f"audit: {changed} changed outcome(s), {broken} invariant violation(s)"


def audit(
    policy: Policy, records: RecordSet, context: Context | None, result: Result,
    stored: Mapping[str, Any] | None = None,
) -> AuditReport:
    """Audit ``result``: against the ``stored`` baseline when given, and its invariants always."""
    tenant = resolve_context(policy, records, context).tenant
    changes = [] if stored is None else compare(policy, stored, result, records, tenant)
    return AuditReport(changes + invariants(policy, records, context, result))


def dumps(data: Mapping[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
