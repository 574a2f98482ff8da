"""mem0: the documented ``get_all()`` and ``search()`` shapes (tests/data/adapters) mapped onto records."""

from __future__ import annotations

import json

import pytest

import memsolve
from memsolve import adapters
from memsolve.errors import InputError

from ..conftest import DATA, make_policy

GET_ALL = DATA / "adapters" / "mem0_get_all.json"
ALICE = "tenant: alice\nstores: [semantic, travel-agent]\nbudget: {tokens: 100}\nutility: {from: relevance}\n"
SEARCH = DATA / "adapters" / "mem0_search.json"


def test_get_all_maps_every_column_of_the_table() -> None:
    imported = adapters.import_file("mem0", str(GET_ALL))
    first, second, third = imported.records
    assert first == {
        "id": "892db2ae-06d9-49e5-8b3e-585ef9b85b8e", "tenant": "alice", "store": "semantic",
        "timestamp": "2026-11-20T09:12:45.123456-08:00", "text": "Prefers vegetarian restaurants",
        # not mapped, so kept: the hash, mem0's own metadata, and the null updated_at
        "metadata": {"hash": "1a271c007316c94377175ee80e746a19", "metadata": {"category": "food", "fact": "diet"},
                     "updated_at": None},
    }
    # updated_at wins over created_at, which stays in metadata; agent_id is the store, run_id the session
    assert second["timestamp"] == "2026-11-28T16:30:00-08:00"
    assert second["metadata"]["created_at"] == "2026-11-21T10:00:00.000000-08:00"
    assert (second["store"], second["session"]) == ("travel-agent", "trip-2026-12")
    assert third["tenant"] == "bob"
    assert imported.summary("x.json") == "imported 3 of 3 mem0 items from x.json"


def test_search_results_keep_their_score() -> None:
    imported = adapters.import_file("mem0", str(SEARCH))
    known = "score" in memsolve.schemas.load_schema("records")["$defs"]["record"]["properties"]
    scores = [r["score"] if known else r["metadata"]["score"] for r in imported.records]
    assert scores == [0.8123, 0.412]
    assert imported.score_in_metadata is not known
    assert ("scores kept as metadata.score" in imported.summary("f")) is not known


def test_the_records_load_and_a_tenant_sees_only_its_own() -> None:
    records = memsolve.load_records(list(adapters.import_file("mem0", str(GET_ALL)).records))
    assert not records.invalid
    policy = make_policy(ALICE,
                         rules="- stores: {allow: [semantic, travel-agent]}\n- relevance: {recency_weight: 0}\n")
    result = memsolve.solve(policy, records, memsolve.Context(now="2026-12-01T00:00:00Z", query="restaurants peanuts"))
    assert [c.id for c in result.selected] == ["892db2ae-06d9-49e5-8b3e-585ef9b85b8e",
                                               "3f1c9a0e-7b2d-4c1e-9a55-2f6b1d0c8e11"]
    assert result.other_tenants == 1
    assert "bob" not in result.to_json() and "a7e3b2c1" not in result.to_json()


def test_key_from_a_metadata_field_feeds_latest_key() -> None:
    items = json.loads(GET_ALL.read_text())["results"]
    items.append({**items[1], "id": "newer-allergy", "memory": "Is no longer allergic to peanuts",
                  "updated_at": "2026-11-30T09:00:00-08:00"})
    imported = adapters.from_mem0({"results": items}, key_from="metadata.fact")
    keys = {r["id"]: r.get("key") for r in imported.records}
    assert keys["newer-allergy"] == keys["3f1c9a0e-7b2d-4c1e-9a55-2f6b1d0c8e11"] == "allergy"
    # the key is taken out of mem0's metadata; the rest of it stays
    assert imported.records[0]["metadata"]["metadata"] == {"category": "food"}
    policy = make_policy(ALICE,
                         rules="- latest_key: {}\n- relevance: {recency_weight: 0}\n")
    result = memsolve.solve(policy, memsolve.load_records(list(imported.records)),
                            memsolve.Context(now="2026-12-01T00:00:00Z", query="peanuts restaurants"))
    assert {e.id: e.rule for e in result.excluded} == {"3f1c9a0e-7b2d-4c1e-9a55-2f6b1d0c8e11": "latest-key"}


def test_a_memory_that_cannot_be_mapped_is_named_by_position_and_line(tmp_path) -> None:
    items = json.loads(GET_ALL.read_text())
    del items["results"][2]["memory"]
    path = tmp_path / "export.json"
    path.write_text(json.dumps(items, indent=2))
    with pytest.raises(InputError) as caught:
        adapters.import_file("mem0", str(path))
    assert caught.value.render().startswith(f"{path}:")
    assert "results[2]" in caught.value.render() and "no text (expected `memory`)" in caught.value.render()
    lines = path.read_text().splitlines()
    third = next(n for n, line in enumerate(lines, 1) if "a7e3b2c1" in line) - 1  # its opening brace
    assert (caught.value.line, lines[third - 1].strip()) == (third, "{")
    skipped = adapters.import_file("mem0", str(path), adapters.Options(skip_unmappable=True))
    assert len(skipped.records) == 2 and skipped.read == 3
    assert "1 skipped (unmappable, at [2])" in skipped.summary("f")


def test_options_fix_tenant_and_store_and_count_records_without_a_tenant() -> None:
    items = json.loads(GET_ALL.read_text())["results"]
    for item in items:
        item.pop("user_id")
    imported = adapters.from_mem0(items)
    assert imported.untenanted == 3 and "3 without a tenant" in imported.summary("f")
    fixed = adapters.from_mem0(items, tenant="acme", store="semantic", ttl="30d")
    assert {(r["tenant"], r["store"], r["ttl"]) for r in fixed.records} == {("acme", "semantic", "30d")}


def test_scores_outside_zero_to_one_stay_in_metadata_and_are_counted() -> None:
    """A raw similarity (1.7, a negative cosine) is no record score: kept as metadata.score, so the
    records still load and the summary says how many."""
    items = [{"id": i, "memory": "deploy", "user_id": "acme", "created_at": "2024-01-01T00:00:00Z", "score": s}
             for i, s in (("a", 1.7), ("b", -0.2), ("c", 0.4))]
    imported = adapters.from_mem0(items)
    by_id = {r["id"]: r for r in imported.records}
    assert [by_id[i].get("metadata", {}).get("score") for i in "abc"] == [1.7, -0.2, None]
    assert by_id["c"]["score"] == 0.4 and "score" not in by_id["a"] and imported.scores_out_of_range == 2
    assert "2 scores outside [0, 1] kept as metadata.score" in imported.summary("f")
    memsolve.load_records(list(imported.records))


def test_a_bad_ttl_is_refused_before_any_item_is_read() -> None:
    for ttl in ("banana", "-5m"):
        with pytest.raises(InputError, match="--ttl: expected a duration"):
            adapters.Options(ttl=ttl)
