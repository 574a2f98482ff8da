"""Policy tests (``memsolve test``): passing and failing cases, and errors in the test file."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from ..conftest import ROOT, write


def test_policy_tests_pass_and_fail(cli, tmp_path: Path) -> None:
    ok = cli("test", "policies/tests/")
    assert ok.exit_code == 0 and ok.stdout.strip().endswith("4 passed, 0 failed")
    failing = write(tmp_path, "t.yaml", f"""apiVersion: memsolve/v1
kind: PolicyTest
metadata: {{name: wrong}}
policy: {ROOT / 'policies/ch15.yaml'}
records: {ROOT / 'examples/ch15/base.json'}
cases:
  - name: old review is selected
    expect:
      old-review: {{outcome: selected}}
  - name: summary is selected
    expect:
      summary: {{outcome: selected, level: raw}}
""")
    result = cli("test", failing, "--format", "junit")
    assert result.exit_code == 1
    root = ET.fromstring(result.stdout)
    assert root.get("tests") == "2" and root.get("failures") == "1"
    plain = cli("test", failing, "--format", "json")
    findings = json.loads(plain.stdout)["findings"]
    assert json.loads(plain.stdout)["summary"] == "1 passed, 1 failed"
    assert findings[0]["message"].startswith("`old-review`: expected outcome `selected`, got `excluded`")


def test_policy_test_file_errors(cli, tmp_path: Path) -> None:
    bad = write(tmp_path, "t.yaml", "apiVersion: memsolve/v1\nkind: PolicyTest\nmetadata: {name: x}\n"
                                    "policy: p.yaml\nrecords: []\ncases:\n  - name: c\n    expekt: {}\n")
    result = cli("test", bad)
    assert result.exit_code == 2 and f"{bad}:7:5" in result.stderr
