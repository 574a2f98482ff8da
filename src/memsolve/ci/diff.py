"""``memsolve diff``: two policies over one record set, record by record and rule by rule.

A rule (matched by id) is *stricter* in the new policy when the records it fails are a strict
superset of those it failed before, *looser* for a strict subset, *equivalent* for the same
set, and *incomparable* otherwise; a rule only in one policy is *added* or *removed*. The
overall verdict compares the eligible sets (records no rule excludes) the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .. import pipeline
from ..context import Context
from ..policies.model import Policy
from ..records import RecordSet
from ..result import Result, outcome_key


@dataclass(frozen=True)
class PolicyDiff:
    changes: list[dict[str, Any]]  # records whose outcome changed: id, before, after
    rules: dict[str, str]  # rule id → stricter | looser | equivalent | incomparable | added | removed
    overall: str

    def to_dict(self) -> dict[str, Any]:
        return {"overall": self.overall, "rules": self.rules, "changes": self.changes}


def compare_sets(before: set[str], after: set[str]) -> str:
    if before == after:
        return "equivalent"
    if after > before:
        return "stricter"
    if after < before:
        return "looser"
    return "incomparable"


def _failing(result: Result) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for entry in result.trace:
        for verdict in entry.rules:
            bucket = out.setdefault(verdict.rule, set())
            if not verdict.passed and entry.id is not None:
                bucket.add(entry.id)
    return out


def diff(old: Policy, new: Policy, records: RecordSet, context: Context | None = None) -> PolicyDiff:
    a = pipeline.solve(old, records, context)
    b = pipeline.solve(new, records, context)
    before, after = a.outcomes(), b.outcomes()
    changes = [{"id": rid, "before": before.get(rid), "after": after.get(rid)}
               for rid in before if outcome_key(before.get(rid)) != outcome_key(after.get(rid))]
    fa, fb = _failing(a), _failing(b)
    rules = {}
    for rule in sorted(set(fa) | set(fb)):
        if rule not in fb:
            rules[rule] = "removed"
        elif rule not in fa:
            rules[rule] = "added"
        else:
            rules[rule] = compare_sets(fa[rule], fb[rule])
    excluded_a = {e.id for e in a.excluded if e.id is not None}
    excluded_b = {e.id for e in b.excluded if e.id is not None}
    return PolicyDiff(changes, rules, compare_sets(excluded_a, excluded_b))
