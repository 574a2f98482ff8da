"""Policy unit tests: YAML files (``kind: PolicyTest``) that name records and their expected outcomes.

    apiVersion: memsolve/v1
    kind: PolicyTest
    metadata: {name: team-a-basics}
    policy: ../team-a.yaml                 # relative to this file
    records: ../../examples/shared.json   # or inline: records: [{id: ..., ...}]
    context: {now: 1000}                   # optional: now, tenant, session, query, budget, max_records,
                                           #           current_version, current_versions
    cases:
      - name: stale approvals never reach the agent
        context: {budget: 300}             # optional, merged over the file's context
        expect:
          a-approval-v2: {outcome: excluded, rule: version-authority}
          a-approval-v3: {outcome: selected}
          a-db-arch: {outcome: selected, level: summary}
          b-approval-v5: {outcome: absent}  # another tenant's: not in this tenant's view

Only the records named are checked (a subset); a case passes when every named record's outcome
(and the level or rule, where given) matches.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import pipeline
from ..context import CONTEXT_FIELDS, Context
from ..errors import InputError, Location, MemsolveError, shown, unknown
from ..policies.load import load_policy
from ..records import load_records
from ..source import Document, load_document
from .findings import Finding

_EXPECT_FIELDS = ("outcome", "level", "rule")
BUILT_IN_RULES = ("tenant", "fidelity-ceiling", "invalid")  # rule ids a trace can show that no policy entry writes


@dataclass(frozen=True)
class Case:
    name: str
    context: Mapping[str, Any]
    expect: Mapping[str, Mapping[str, Any]]
    where: Location


def find_test_files(paths: list[str]) -> list[Path]:
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml")))
        elif path.exists():
            files.append(path)
        else:
            raise InputError("no such file or folder", Location(raw))
    return files


def run_file(path: Path) -> list[Finding]:
    """Run one test file; a finding per case (failed cases carry the mismatches)."""
    doc, _ = load_document(path, fmt="yaml")
    data = doc.data
    _expect_shape(doc, data)
    suite = f"test:{data['metadata']['name']}"
    cases = _cases(doc, data)  # the whole file is checked before anything runs
    policy = load_policy(path.parent / data["policy"])
    _check_rule_names(doc, cases, [rule.id for rule in policy.rules])
    source = data["records"]
    records = load_records(path.parent / source if isinstance(source, str) else source)
    base = dict(data.get("context") or {})
    findings = []
    for case in cases:
        merged = {**base, **case.context}
        try:
            result = pipeline.solve(policy, records, Context(**merged))
        except MemsolveError as exc:
            findings.append(Finding(suite, case.name, False, f"the solve failed: {exc}", "test-error",
                                    location=case.where))
            continue
        got = result.outcomes()
        problems = []
        for rid, want in case.expect.items():
            have = got.get(rid)
            if want["outcome"] == "absent":  # not in the tenant's view: another tenant's, or no such id
                if have is not None:
                    problems.append(f"`{rid}`: expected outcome `absent`, got `{have['outcome']}`")
                continue
            if have is None:
                problems.append(f"`{rid}`: no such record")
                continue
            for key, value in want.items():
                if have.get(key) != value:
                    problems.append(f"`{rid}`: expected {key} `{value}`, got `{have.get(key)}`"
                                    + (f" ({have['reason']})" if have.get("reason") else ""))
        findings.append(Finding(suite, case.name, not problems, "; ".join(problems), "test-failed",
                                location=case.where))
    return findings


def _expect_shape(doc: Document, data: Any) -> None:
    if not isinstance(data, dict):
        raise doc.error((), "a policy test must be a mapping")
    for key, value in (("apiVersion", "memsolve/v1"), ("kind", "PolicyTest")):
        if data.get(key) != value:
            raise doc.error((key,), f"expected `{key}: {value}`")
    if not isinstance(data.get("metadata"), dict) or not isinstance(data["metadata"].get("name"), str):
        raise doc.error(("metadata",), "expected `metadata: {name: ...}`")
    if not isinstance(data.get("policy"), str):
        raise doc.error(("policy",), "expected `policy:` the path of the policy under test")
    if not isinstance(data.get("records"), (str, list, dict)):
        raise doc.error(("records",), "expected `records:` a path or inline records")
    unknown = set(data) - {"apiVersion", "kind", "metadata", "policy", "records", "context", "cases"}
    if unknown:
        key = sorted(unknown)[0]
        raise doc.error((key,), f"unknown field `{shown(key)}`", key=True)
    _check_context(doc, data.get("context"), ("context",))


def _check_context(doc: Document, context: Any, path: tuple[Any, ...]) -> None:
    if context is None:
        return
    if not isinstance(context, dict):
        raise doc.error(path, "expected a mapping")
    for key in context:
        if key not in CONTEXT_FIELDS:
            raise doc.error(path + (key,), f"unknown context field `{shown(key)}`; expected one of "
                            + ", ".join(f"`{f}`" for f in CONTEXT_FIELDS), key=True)


def _cases(doc: Document, data: Mapping[str, Any]) -> list[Case]:
    cases = data.get("cases")
    if not isinstance(cases, list) or not cases:
        raise doc.error(("cases",), "expected `cases:` a non-empty list")
    out = []
    for index, case in enumerate(cases):
        path = ("cases", index)
        if not isinstance(case, dict) or not isinstance(case.get("name"), str):
            raise doc.error(path, "each case needs a `name`")
        _check_context(doc, case.get("context"), path + ("context",))
        expect = case.get("expect")
        if not isinstance(expect, dict) or not expect:
            raise doc.error(path + ("expect",), "expected `expect:` record id -> {outcome, level, rule}")
        for rid, want in expect.items():
            if not isinstance(want, dict) or not set(want) <= set(_EXPECT_FIELDS) or "outcome" not in want:
                raise doc.error(path + ("expect", rid),
                                "expected {outcome: selected|dropped|excluded|absent, level?, rule?}")
            if want["outcome"] not in ("selected", "dropped", "excluded", "absent"):
                raise doc.error(path + ("expect", rid, "outcome"), "expected selected, dropped, excluded or absent")
        out.append(Case(case["name"], dict(case.get("context") or {}), expect, doc.locate(path)))
    return out


def _check_rule_names(doc: Document, cases: list[Case], rule_ids: list[str]) -> None:
    """An expected `rule:` is a rule id as traces show it; a miss is the test file's error, with
    the closest id, rather than a case that can never pass."""
    known = [*rule_ids, *BUILT_IN_RULES]
    for index, case in enumerate(cases):
        for rid, want in case.expect.items():
            if "rule" in want and want["rule"] not in known:
                raise doc.error(("cases", index, "expect", rid, "rule"), unknown(want["rule"], known, "rule"))


def summary(findings: list[Finding]) -> str:
    """``N passed, N failed``: the closing line of a policy test run."""
    passed = sum(1 for f in findings if f.passed)
    return f"{passed} passed, {len(findings) - passed} failed"
