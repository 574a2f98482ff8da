"""Letta: passages and messages built with its client's own models (``letta_client``), then adapted."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

import memsolve
from memsolve import adapters

from ..conftest import needs

try:
    from letta_client.types import Passage
    from letta_client.types.agents import AssistantMessage, ReasoningMessage, UserMessage
except ImportError:  # letta-client is a test dependency only: the importer reads plain JSON
    Passage = None

pytestmark = needs(Passage is not None, "letta-client (pip install letta-client)")

WHEN = datetime(2026, 11, 30, 9, 0, tzinfo=timezone.utc)


def _passages() -> list:
    return [
        Passage(id="passage-1", text="The customer prefers email over phone", created_at=WHEN,
                archive_id="archive-7", tags=["contact", "preference"], metadata={"source": "crm"}),
        Passage(id="passage-2", text="Renewal is due in March", created_at=WHEN.replace(day=29)),
    ]


def _messages() -> list:
    return [
        UserMessage(id="message-1", date=WHEN, content="Can you move my call to Friday?", step_id="step-1",
                    message_type="user_message"),
        ReasoningMessage(id="message-2", date=WHEN, reasoning="The user wants to reschedule", step_id="step-1",
                         message_type="reasoning_message"),
        AssistantMessage(id="message-3", date=WHEN, content=[{"type": "text", "text": "Done:"},
                                                             {"type": "text", "text": "Friday at 10."}],
                         step_id="step-1", message_type="assistant_message"),
    ]


def test_passages_are_archival_and_messages_recall() -> None:
    imported = adapters.from_letta([*_passages(), *_messages()], tenant="agent-42")
    by_id = {r["id"]: r for r in imported.records}
    assert by_id["passage-1"]["store"] == "archival" and by_id["message-1"]["store"] == "recall"
    assert by_id["passage-1"]["text"] == "The customer prefers email over phone"
    assert by_id["passage-1"]["timestamp"] == "2026-11-30T09:00:00Z"
    assert by_id["passage-1"]["metadata"]["tags"] == ["contact", "preference"]
    assert by_id["passage-1"]["metadata"]["metadata"] == {"source": "crm"}
    assert by_id["message-1"]["text"] == "Can you move my call to Friday?"
    assert by_id["message-2"]["text"] == "The user wants to reschedule"
    assert by_id["message-3"]["text"] == "Done:\nFriday at 10."
    assert {by_id[m]["session"] for m in ("message-1", "message-2", "message-3")} == {"step-1"}
    assert {r["tenant"] for r in imported.records} == {"agent-42"} and imported.untenanted == 0


def test_the_records_solve_for_the_agent() -> None:
    imported = adapters.from_letta([*_passages(), *_messages()], tenant="agent-42")
    policy = memsolve.policy_from_text(
        "apiVersion: memsolve/v1\nkind: MemoryPolicy\nmetadata: {name: letta}\ntenant: agent-42\n"
        "stores: [archival, recall]\nbudget: {tokens: 12}\nutility: {from: relevance}\n"
        "rules:\n  - relevance: {recency_weight: 0}\n", "letta.yaml")
    result = memsolve.solve(policy, memsolve.load_records(list(imported.records)),
                            memsolve.Context(now="2026-12-01T00:00:00Z", query="when is the call on friday"))
    assert result.tokens_used <= 12 and "message-1" in [c.id for c in result.selected]


def test_tags_as_the_key_and_an_organization_as_the_tenant() -> None:
    passage = _passages()[0].model_dump(mode="json")
    passage["organization_id"] = "org-1"  # older Letta servers include it
    (record,) = adapters.from_letta([passage], key_from="tags").records
    assert (record["tenant"], record["key"]) == ("org-1", "contact,preference")
    assert "tags" not in record["metadata"] and "organization_id" not in record["metadata"]


def test_a_message_of_images_only_cannot_be_mapped() -> None:
    message = {"id": "m", "date": "2026-11-30T09:00:00Z", "message_type": "user_message",
               "content": [{"type": "image", "source": {"type": "url", "url": "https://example.com/x.png"}}]}
    with pytest.raises(memsolve.InputError, match=r"<letta>: \[0\]\.content\[0\]: a content part holds no text"):
        adapters.from_letta([message])
