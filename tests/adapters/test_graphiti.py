"""Graphiti: entity edges (facts with validity intervals) and episodes, from ``model_dump`` JSON."""

from __future__ import annotations

from datetime import datetime, timezone

import memsolve
from memsolve import adapters

from ..conftest import DATA

FILE = DATA / "adapters" / "graphiti.json"


def test_edges_and_episodes() -> None:
    imported = adapters.import_file("graphiti", str(FILE), adapters.Options(omit=("fact_embedding",)))
    acme, globex, episode = imported.records
    assert (acme["store"], acme["tenant"], acme["key"]) == ("edge", "acme", "n-alice·WORKS_AT·n-acme")
    valid = datetime(2026, 11, 15, tzinfo=timezone.utc) - datetime(2026, 1, 1, tzinfo=timezone.utc)
    assert acme["ttl"] == f"{int(valid.total_seconds())}s" == "27475200s"  # invalid_at − valid_at
    assert "invalid_at" not in acme["metadata"] and acme["metadata"]["name"] == "WORKS_AT"
    assert "fact_embedding" not in acme["metadata"] and imported.omitted == ("fact_embedding",)
    assert "ttl" not in globex  # still valid: no invalid_at
    assert (episode["store"], episode["text"]) == ("episode", "Alice: I started at Globex in mid November.")
    assert episode["timestamp"] == "2026-11-20T11:59:00Z"


def test_the_newer_fact_supersedes_and_the_invalid_one_expires() -> None:
    imported = adapters.import_file("graphiti", str(FILE))
    policy = memsolve.policy_from_text(
        "apiVersion: memsolve/v1\nkind: MemoryPolicy\nmetadata: {name: graph}\ntenant: acme\n"
        "stores: [edge, episode]\nbudget: {tokens: 50}\nutility: {from: relevance}\n"
        "rules:\n  - freshness: {default_ttl: null}\n  - latest_key: {}\n  - relevance: {recency_weight: 0}\n",
        "graph.yaml")
    result = memsolve.solve(policy, memsolve.load_records(list(imported.records)),
                            memsolve.Context(now="2026-12-01T00:00:00Z", query="where does Alice work"))
    excluded = {e.id: e.rule for e in result.excluded}
    assert excluded == {"e1a2b3c4-0000-4000-8000-000000000001": "freshness"}
    assert [c.id for c in result.selected][0] == "e1a2b3c4-0000-4000-8000-000000000002"
