"""LangGraph: items put into and searched from a real ``InMemoryStore``, then adapted."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

import memsolve
from memsolve import adapters

from ..conftest import DATA, make_policy, needs

try:
    from langgraph.store.memory import InMemoryStore
except ImportError:  # the langgraph extra is not installed
    InMemoryStore = None

ACME = "tenant: acme\nstores: [memories]\nbudget: {tokens: 100}\nutility: {from: relevance}\n"
pytestmark = needs(InMemoryStore is not None, "langgraph (pip install 'memsolve[langgraph]')")


def _store() -> InMemoryStore:
    store = InMemoryStore()
    store.put(("acme", "memories"), "deploy", {"text": "the deploy failed because the migration timed out",
                                               "topic": "ops"})
    store.put(("acme", "memories"), "oncall", {"text": "Dana is on call this week"})
    store.put(("acme", "notes"), "lunch", {"content": "team lunch on Friday"})
    store.put(("globex", "memories"), "deploy", {"text": "Globex deploys on Fridays"})
    return store


def test_items_from_search_become_records() -> None:
    store = _store()
    items = store.search(("acme",), limit=10)
    imported = adapters.from_langgraph(items)
    by_id = {r["id"]: r for r in imported.records}
    assert set(by_id) == {"acme/memories/deploy", "acme/memories/oncall", "acme/notes/lunch"}
    deploy = by_id["acme/memories/deploy"]
    item = store.get(("acme", "memories"), "deploy")
    assert (deploy["tenant"], deploy["store"], deploy["key"]) == ("acme", "memories", "deploy")
    assert deploy["timestamp"] == item.updated_at.isoformat().replace("+00:00", "Z")
    assert deploy["metadata"]["value"] == {"topic": "ops"}  # the value's other fields are kept
    assert deploy["metadata"]["namespace"] == ["acme", "memories"]
    assert by_id["acme/notes/lunch"]["text"] == "team lunch on Friday"  # value.content when there is no text
    assert "score" not in deploy and "score" not in deploy.get("metadata", {})  # a search with no query: None


def test_the_same_records_from_the_items_and_from_their_dict() -> None:
    items = _store().search(("acme",))
    assert adapters.from_langgraph(items).records == adapters.from_langgraph([i.dict() for i in items]).records


def test_ttl_expires_at_read_time() -> None:
    """InMemoryStore keeps no TTL (``put(..., ttl=)`` raises); the store's TTL is the import's ``ttl``,
    and memsolve's freshness rule expires the records when it reads them."""
    store = _store()
    with pytest.raises(NotImplementedError):
        store.put(("acme", "memories"), "x", {"text": "y"}, ttl=5)
    imported = adapters.from_langgraph(store.search(("acme", "memories")), ttl="30m")
    assert {r["ttl"] for r in imported.records} == {"30m"}
    policy = make_policy(ACME, rules="- freshness: {default_ttl: null}\n- relevance: {recency_weight: 0}\n")
    records = memsolve.load_records(list(imported.records))
    written = max(datetime.fromisoformat(r["timestamp"].replace("Z", "+00:00")) for r in imported.records)
    fresh, stale = (memsolve.solve(policy, records, memsolve.Context(now=_rfc(written + timedelta(minutes=minutes)),
                                                                     query="deploy on call"))
                    for minutes in (29, 31))
    assert len(fresh.selected) == 2 and not fresh.excluded
    assert not stale.selected and {e.rule for e in stale.excluded} == {"freshness"}


def test_expires_at_is_the_items_own_ttl() -> None:
    imported = adapters.import_file("langgraph", str(DATA / "adapters" / "langgraph.jsonl"))
    oncall = next(r for r in imported.records if r["key"] == "oncall")
    assert oncall["ttl"] == "43200s"  # 20:00 − 08:00
    assert "expires_at" not in oncall.get("metadata", {})


def test_a_search_with_a_query_keeps_the_score() -> None:
    # an index makes InMemoryStore score its results: a toy embedding, deterministic
    store = InMemoryStore(index={"dims": 2, "embed": lambda texts: [[float(len(t)), 1.0] for t in texts]})
    store.put(("acme", "memories"), "a", {"text": "short"})
    store.put(("acme", "memories"), "b", {"text": "a longer memory text"})
    results = store.search(("acme",), query="deploy")
    imported = adapters.from_langgraph(results)
    known = "score" in memsolve.schemas.load_schema("records")["$defs"]["record"]["properties"]
    scores = [r["score"] if known else r["metadata"]["score"] for r in imported.records]
    assert scores == [item.score for item in results] and all(isinstance(s, float) for s in scores)


def test_the_tenant_can_be_another_namespace_element() -> None:
    store = InMemoryStore()
    store.put(("memories", "acme"), "k", {"text": "t"})
    imported = adapters.from_langgraph(store.search(("memories",)), tenant_from="namespace.1")
    (record,) = imported.records
    assert (record["tenant"], record["store"], record["id"]) == ("acme", "memories", "memories/acme/k")


def test_an_item_without_text_names_the_field_to_choose(tmp_path) -> None:
    item = {"namespace": ["acme"], "key": "k", "value": {"summary": "s"}, "created_at": "2026-11-01T00:00:00Z",
            "updated_at": "2026-11-01T00:00:00Z"}
    path = tmp_path / "items.jsonl"
    path.write_text(json.dumps(item) + "\n" + json.dumps({**item, "key": "k2", "value": {}}) + "\n")
    with pytest.raises(memsolve.InputError, match=r"items.jsonl:1:\d+: \[0\]: .*--text-from"):
        adapters.import_file("langgraph", str(path))
    imported = adapters.import_file("langgraph", str(path), adapters.Options(text_from="value.summary",
                                                                             skip_unmappable=True))
    assert [r["text"] for r in imported.records] == ["s"] and imported.skipped[0].position == 1
    assert "items.jsonl:2:" in imported.skipped[0].error.render()


def _rfc(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def test_ids_that_collide_are_unmappable_with_both_positions() -> None:
    """`"/".join(namespace + [key])` is the same for (["acme", "memories/x"], "c") and (["acme", "memories"], "x/c")."""
    items = [{"namespace": ns, "key": key, "value": {"text": text}, "updated_at": "2024-01-01T00:00:00Z"}
             for ns, key, text in ((["acme", "memories/x"], "c", "one"), (["acme", "memories"], "x/c", "two"))]
    with pytest.raises(memsolve.InputError) as caught:
        adapters.from_langgraph(items)
    assert caught.value.render() == "<langgraph>: [1]: id `acme/memories/x/c` is also item [0]'s"
    kept = adapters.from_langgraph(items, skip_unmappable=True)
    assert [r["text"] for r in kept.records] == ["one"] and "at [1]" in kept.summary("f")


def test_key_from_that_matches_nothing_is_counted() -> None:
    items = [{"namespace": ["acme", "memories"], "key": k, "value": {"text": "t", **extra},
              "updated_at": "2024-01-01T00:00:00Z"} for k, extra in (("a", {"fact": "f"}), ("b", {}))]
    imported = adapters.from_langgraph(items, key_from="value.fact")
    assert [r.get("key") for r in imported.records] == ["f", None] and imported.unkeyed == 1
    assert "1 without `--key-from` field, so without a key" in imported.summary("f")
