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

from ..errors import InputError, Location, MemsolveError, SolverError
from .codes import CODES, HOMEPAGE
from .locations import location_text, uri

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
            out["location"] = {"file": uri(self.location.file) if self.location.file else None,
                               "line": self.location.line,
                               "column": self.location.column}
        if self.data:
            out["data"] = self.data
        return out


def stopped(suite: str, error: MemsolveError) -> Finding:
    """An error that stopped a command (exit 2, or 3 for a solver) as one failed finding, located
    where the error is, so the reports asked for still say the run failed and why."""
    code = "solver-error" if isinstance(error, SolverError) else "input-error"
    if isinstance(error, InputError) and error.file:
        message = f"{error.path}: {error.message}" if error.path else error.message
        return Finding(suite, uri(error.file), False, message, code, location=error.location)
    return Finding(suite, suite, False, error.render() if isinstance(error, InputError) else str(error), code)


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
    """JUnit XML: one testsuite per suite, one testcase per finding.

    Only what fails the run is a ``<failure>``: a warning or note is a passing testcase that
    carries its level, code and location as properties and its message as system-out.
    """
    suites: dict[str, list[Finding]] = {}
    for f in findings:
        suites.setdefault(f.suite, []).append(f)
    total = len(findings)
    failures = len(failed(findings))
    lines = ['<?xml version="1.0" encoding="UTF-8"?>',
             f'<testsuites name="memsolve" tests="{total}" failures="{failures}" errors="0">']
    for suite, items in suites.items():
        bad = len(failed(items))
        lines.append(f'  <testsuite name={quoteattr(suite)} tests="{len(items)}" failures="{bad}" errors="0" '
                     f'skipped="0" time="0">')
        for f in items:
            attrs = f'name={quoteattr(f.name)} classname={quoteattr(suite)} time="0"'
            if f.location is not None and f.location.file:
                attrs += f" file={quoteattr(uri(f.location.file))}"
                if f.location.line:
                    attrs += f' line="{f.location.line}"'
            if f.passed:
                lines.append(f"    <testcase {attrs}/>")
                continue
            lines.append(f"    <testcase {attrs}>")
            if f.level == "error":
                lines.append(f"      <failure message={quoteattr(f.message)} type={quoteattr(f.code or 'failure')}>"
                             f"{escape(_where(f) + f.message)}</failure>")
            else:
                lines.append("      <properties>")
                for key, value in (("level", f.level), ("code", f.code), ("location", location_text(f.location))):
                    if value:
                        lines.append(f"        <property name={quoteattr(key)} value={quoteattr(value)}/>")
                lines.append("      </properties>")
                lines.append(f"      <system-out>{escape(f'{f.level}: {_where(f)}{f.message}')}</system-out>")
            lines.append("    </testcase>")
        lines.append("  </testsuite>")
    lines.append("</testsuites>")
    return "\n".join(lines) + "\n"


def _where(f: Finding) -> str:
    text = location_text(f.location)
    return text + ": " if text else ""


def sarif(findings: Sequence[Finding], tool_version: str) -> str:
    """SARIF 2.1.0: one run; every code memsolve has is a described rule (:mod:`.codes`), each
    failed finding a result located at the policy or record line it concerns."""
    index = {code.id: i for i, code in enumerate(CODES)}
    rules = [{
        "id": code.id,
        "name": code.name,
        "shortDescription": {"text": code.short},
        "fullDescription": {"text": code.help},
        "help": {"text": code.help, "markdown": f"{code.help}\n\n[{code.id} in the README]({code.help_uri})"},
        "helpUri": code.help_uri,
        "defaultConfiguration": {"level": code.level},
    } for code in CODES]
    results = []
    for f in findings:
        if f.passed:
            continue
        result: dict[str, Any] = {"ruleId": f.code}
        if f.code in index:
            result["ruleIndex"] = index[f.code]
        result["level"] = f.level if f.level in ("error", "warning", "note") else "error"
        result["message"] = {"text": f"{f.name}: {f.message}"}
        if f.location is not None and f.location.file:
            physical: dict[str, Any] = {"artifactLocation": {"uri": uri(f.location.file)}}
            if f.location.line:
                physical["region"] = {"startLine": f.location.line}
                if f.location.column:
                    physical["region"]["startColumn"] = f.location.column
            result["locations"] = [{"physicalLocation": physical}]
        results.append(result)
    log = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{"tool": {"driver": {"name": "memsolve", "version": tool_version, "informationUri": HOMEPAGE,
                                      "rules": rules}},
                  "columnKind": "unicodeCodePoints",
                  "results": results}],
    }
    return json.dumps(log, indent=2) + "\n"


def github(findings: Sequence[Finding]) -> str:
    """GitHub Actions workflow commands: one ::error/::warning/::notice line per failed finding."""
    lines = []
    for f in findings:
        if f.passed:
            continue
        kind = {"error": "error", "warning": "warning"}.get(f.level, "notice")
        props = []
        if f.location is not None and f.location.file:
            props.append(f"file={_gh_property(uri(f.location.file))}")
            if f.location.line:
                props.append(f"line={f.location.line}")
            if f.location.column:
                props.append(f"col={f.location.column}")
        props.append(f"title={_gh_property(f.code or f.suite)}")
        lines.append(f"::{kind} {','.join(props)}::{_gh(f.name + ': ' + f.message)}")
    return "\n".join(lines) + ("\n" if lines else "")


def _gh_property(text: str) -> str:
    # property values also escape the separators of the property list
    return _gh(text).replace(":", "%3A").replace(",", "%2C")


def _gh(text: str) -> str:
    # GitHub's escaping for workflow command data
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
