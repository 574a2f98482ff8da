"""Merge the reports of several memsolve commands into one SARIF log and one JUnit file (what the
GitHub action uploads): ``python -m memsolve.ci.reports PARTS_DIR OUT.sarif OUT.xml``.

Every ``*.sarif`` and ``*.xml`` in PARTS_DIR is merged, so the folder must hold one call's parts
only: the action gives each call a new, empty one.

Every memsolve SARIF run describes the same rules (the whole table of :mod:`.codes`, in its
order), so the merged log is one run whose results are the parts' results, rule indexes intact;
one SARIF run per tool is what code scanning expects of an upload.
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from ..errors import InputError, Location


def merge_sarif(logs: list[dict[str, Any]]) -> dict[str, Any]:
    """One log, one run: the first part's tool, every part's results in order."""
    if not logs:
        from .findings import sarif

        return json.loads(sarif([], _version()))
    merged = json.loads(json.dumps(logs[0]))  # a deep copy
    run = merged["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    for log in logs[1:]:
        for other in log["runs"]:
            if other["tool"]["driver"]["rules"] != rules:
                raise InputError("the SARIF parts come from different memsolve versions (their rules differ)")
            run["results"].extend(other["results"])
    return merged


def merge_junit(roots: list[ET.Element]) -> ET.Element:
    """One ``<testsuites>`` holding every part's suites, with the totals added up."""
    merged = ET.Element("testsuites", name="memsolve")
    tests = failures = 0
    for root in roots:
        for suite in root.iter("testsuite"):
            merged.append(suite)
            tests += int(suite.get("tests", 0))
            failures += int(suite.get("failures", 0))
    merged.set("tests", str(tests))
    merged.set("failures", str(failures))
    merged.set("errors", "0")
    return merged


def _version() -> str:
    from .. import __version__

    return __version__


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: python -m memsolve.ci.reports PARTS_DIR OUT.sarif OUT.xml", file=sys.stderr)
        return 2
    parts, sarif_out, junit_out = Path(argv[0]), Path(argv[1]), Path(argv[2])
    try:
        logs = []
        for path in sorted(parts.glob("*.sarif")):
            try:
                logs.append(json.loads(path.read_text("utf-8")))
            except ValueError as error:
                raise InputError(f"not a SARIF log: {error}", Location(str(path))) from None
        roots = []
        for path in sorted(parts.glob("*.xml")):
            try:
                roots.append(ET.parse(path).getroot())
            except ET.ParseError as error:
                raise InputError(f"not a JUnit report: {error}", Location(str(path))) from None
        sarif_out.write_text(json.dumps(merge_sarif(logs), indent=2) + "\n", "utf-8")
        ET.ElementTree(merge_junit(roots)).write(junit_out, encoding="UTF-8", xml_declaration=True)
    except InputError as error:
        print(f"error: {error.render()}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
