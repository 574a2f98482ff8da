"""diff: two policies compared rule by rule (looser, stricter, equivalent, incomparable)."""

from __future__ import annotations

import json


def test_diff_verdicts(cli) -> None:
    looser = json.loads(cli("diff", "policies/team-a.yaml", "policies/team-a-next.yaml", "--format", "json").stdout)
    assert looser["overall"] == "looser"
    assert looser["rules"]["freshness"] == "looser" and looser["rules"]["max-age"] == "looser"
    assert looser["rules"]["tenant"] == "equivalent"
    assert {c["id"] for c in looser["changes"]} >= {"a-incident-2025", "a-working-stale"}
    stricter = json.loads(cli("diff", "policies/team-a-next.yaml", "policies/team-a.yaml", "--format", "json").stdout)
    assert stricter["overall"] == "stricter"
    same = json.loads(cli("diff", "policies/team-a.yaml", "policies/team-a.yaml", "--format", "json").stdout)
    assert same["overall"] == "equivalent" and same["changes"] == []


def test_diff_incomparable_and_added() -> None:
    from memsolve.ci.diff import compare_sets

    assert compare_sets({"a"}, {"b"}) == "incomparable"
    assert compare_sets(set(), {"a"}) == "stricter"
