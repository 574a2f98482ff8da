"""check: the lint codes, with and without records."""

from __future__ import annotations

import json
from pathlib import Path

from ..conftest import write


def test_check_lint_codes(cli, tmp_path: Path) -> None:
    head = "apiVersion: memsolve/v1\nkind: MemoryPolicy\nmetadata: {name: lint}\nbudget: {tokens: 1}\n"
    policy = write(tmp_path, "p.yaml", head + "utility: {from: relevance}\nrules:\n"
                   "  - stores: {allow: []}\n  - max_age: 10\n  - freshness: {default_ttl: 20}\n"
                   "  - sessions: {include_previous: false}\n")
    result = cli("check", policy, "--format", "json")
    assert result.exit_code == 1  # MS003 and MS007 are errors
    codes = sorted(f["code"] for f in json.loads(result.stdout)["findings"] if not f["passed"])
    assert codes == ["MS002", "MS003", "MS005", "MS007"]
    records = write(tmp_path, "r.json", [{"id": "x", "timestamp": 0, "tokens": 5, "utility": 1}])
    relevant = write(tmp_path, "q.yaml", head + "context: {now: 0}\nrules:\n  - relevance: {}\n  - max_age: 10\n")
    found = json.loads(cli("check", relevant, "--records", records, "--format", "json").stdout)["findings"]
    assert sorted(f["code"] for f in found if not f["passed"]) == ["MS001", "MS001", "MS004", "MS006"]
    broken = write(tmp_path, "b.yaml", head + "rules: [{max-age: 1}]\n")
    failed = cli("check", broken, "--format", "json")
    assert failed.exit_code == 1
    assert [f["code"] for f in json.loads(failed.stdout)["findings"]] == ["MS000"]


def test_budget_lint_reads_only_the_tenants_records(tmp_path: Path) -> None:
    from memsolve.ci.lint import check_policy
    from memsolve.records import load_records

    policy = write(tmp_path, "p.yaml", "apiVersion: memsolve/v1\nkind: MemoryPolicy\nmetadata: {name: p}\n"
                                       "tenant: team-a\nbudget: {tokens: 5}\n")
    messages = []
    for theirs in (1, 7, 100):  # another tenant's smallest record must change nothing
        records = load_records({"now": 100, "records": [
            {"id": "a1", "tenant": "team-a", "timestamp": 1, "tokens": 10, "utility": 1.0},
            {"id": "b1", "tenant": "team-b", "timestamp": 1, "tokens": theirs, "utility": 1.0}]})
        messages.append([f.message for f in check_policy(str(policy), records) if f.code == "MS004"])
    assert messages[0] == messages[1] == messages[2] == [
        "budget 5 is below the smallest representation of every record (10 tokens): nothing can be selected"]
