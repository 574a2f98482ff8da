"""Findings for CI: one shape for audit differences, invariant violations, failed policy tests
and lint results, rendered as JSON, a table, JUnit XML, SARIF 2.1.0 or GitHub annotations.

Renderers only format; the commands decide what is a finding.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from ..errors import Location

FORMATS = ("table", "json", "junit", "sarif", "github")


@dataclass(frozen=True)
class Finding:
    """One check's result. ``passed`` findings are kept so JUnit can count the passing cases."""

    suite: str  # e.g. "audit", "test:team-a-basics", "check"
    name: str  # the case: a record id, a test case, a lint code and rule
    passed: bool
    message: str = ""
    code: str = ""  # a stable code: MS001.., changed-outcome, invariant-tenant, ...
    level: str = "error"  # error, warning or note
    location: Location | None = None
    data: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"suite": self.suite, "name": self.name, "passed": self.passed,
                               "code": self.code, "level": self.level, "message": self.message}
        if self.location is not None:
            out["location"] = {"file": self.location.file, "line": self.location.line,
                               "column": self.location.column}
        if self.data:
            out["data"] = self.data
        return out


def failed(findings: Sequence[Finding]) -> list[Finding]:
    return [f for f in findings if not f.passed and f.level == "error"]


def render(findings: Sequence[Finding], fmt: str, tool_version: str, summary: str = "") -> str:
    """The findings in one of :data:`FORMATS` (the table lists failures, then the summary line)."""
    if fmt == "table":
        from ..render import capture, findings_table

        return capture(findings_table, findings) + summary + "\n"
    if fmt == "json":
        return json.dumps({"summary": summary, "findings": [f.to_dict() for f in findings]}, indent=2) + "\n"
    if fmt == "junit":
        return junit(findings)
    if fmt == "sarif":
        return sarif(findings, tool_version)
    if fmt == "github":
        return github(findings)
    raise ValueError(fmt)


def junit(findings: Sequence[Finding]) -> str:
    """JUnit XML: one testsuite per suite, one testcase per finding."""
    suites: dict[str, list[Finding]] = {}
    for f in findings:
        suites.setdefault(f.suite, []).append(f)
    total = len(findings)
    failures = sum(1 for f in findings if not f.passed)
    lines = ['<?xml version="1.0" encoding="UTF-8"?>',
             f'<testsuites name="memsolve" tests="{total}" failures="{failures}" errors="0">']
    for suite, items in suites.items():
        bad = sum(1 for f in items if not f.passed)
        lines.append(f'  <testsuite name={quoteattr(suite)} tests="{len(items)}" failures="{bad}" errors="0" '
                     f'skipped="0" time="0">')
        for f in items:
            attrs = f'name={quoteattr(f.name)} classname={quoteattr(suite)} time="0"'
            if f.location is not None and f.location.file:
                attrs += f" file={quoteattr(f.location.file)}"
                if f.location.line:
                    attrs += f' line="{f.location.line}"'
            if f.passed:
                lines.append(f"    <testcase {attrs}/>")
            else:
                lines.append(f"    <testcase {attrs}>")
                lines.append(f"      <failure message={quoteattr(f.message)} type={quoteattr(f.code or 'failure')}>"
                             f"{escape(f.message)}</failure>")
                lines.append("    </testcase>")
        lines.append("  </testsuite>")
    lines.append("</testsuites>")
    return "\n".join(lines) + "\n"


def sarif(findings: Sequence[Finding], tool_version: str) -> str:
    """SARIF 2.1.0: one run, a rule per code, a result per failed finding, located in the policy."""
    bad = [f for f in findings if not f.passed]
    codes = sorted({f.code for f in bad})
    rules = [{"id": code, "name": code, "shortDescription": {"text": code}} for code in codes]
    results = []
    for f in bad:
        result: dict[str, Any] = {
            "ruleId": f.code,
            "ruleIndex": codes.index(f.code),
            "level": f.level if f.level in ("error", "warning", "note") else "error",
            "message": {"text": f"{f.name}: {f.message}"},
        }
        if f.location is not None and f.location.file:
            region = {"startLine": f.location.line or 1}
            if f.location.column:
                region["startColumn"] = f.location.column
            result["locations"] = [{"physicalLocation": {"artifactLocation": {"uri": f.location.file},
                                                         "region": region}}]
        results.append(result)
    log = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{"tool": {"driver": {"name": "memsolve", "version": tool_version,
                                      "informationUri": "https://github.com/memsolve/memsolve", "rules": rules}},
                  "results": results}],
    }
    return json.dumps(log, indent=2) + "\n"


def github(findings: Sequence[Finding]) -> str:
    """GitHub Actions workflow commands: one ::error/::warning line per failed finding."""
    lines = []
    for f in findings:
        if f.passed:
            continue
        kind = {"error": "error", "warning": "warning"}.get(f.level, "notice")
        props = []
        if f.location is not None and f.location.file:
            props.append(f"file={f.location.file}")
            if f.location.line:
                props.append(f"line={f.location.line}")
        props.append(f"title={_gh(f.code or f.suite)}")
        lines.append(f"::{kind} {','.join(props)}::{_gh(f.name + ': ' + f.message)}")
    return "\n".join(lines) + ("\n" if lines else "")


def _gh(text: str) -> str:
    # GitHub's escaping for workflow command data
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
