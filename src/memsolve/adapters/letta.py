"""Letta archival passages and recall messages, as its client returns them (``letta_client``
models, or their ``model_dump(mode="json")``)."""

from __future__ import annotations

from typing import Any

from ._mapping import Fields, Options, Unmappable

SOURCE = "letta"
TENANT_FIELDS = ("organization_id", "agent_id")
STORE_FIELD = None  # the store is the kind of item, no source field
MAPPING = {
    "id": "`id`",
    "tenant": "`organization_id`, else `agent_id`",
    "store": "`archival` (passages), `recall` (messages)",
    "session": "`step_id`",
    "key": "`--key-from tags` or `--key-from label`",
    "timestamp": "`created_at`, else `date` (messages)",
    "ttl": "`--ttl`",
    "text": "`text` (passages), `content` or `reasoning` (messages)",
    "score": "—",
}


def map_item(fields: Fields, options: Options, chosen: dict[str, Any]) -> dict[str, Any]:
    message = fields.has("message_type") or fields.has("role") or (fields.has("content") and not fields.has("text"))
    out: dict[str, Any] = {"id": fields.text("id"), "store": "recall" if message else "archival"}
    if "tenant" not in chosen:
        out["tenant"] = fields.tenant(options, *TENANT_FIELDS)
    out["session"] = fields.text("step_id")
    path, when = fields.first("created_at", "date")
    if path is not None:
        out["timestamp"] = fields.time(when, path)[0]
    if "text" not in chosen:
        if fields.has("text"):
            out["text"] = fields.text("text")
        elif fields.has("content"):
            out["text"] = _content(fields.peek("content"))
            fields.take("content")
        elif fields.has("reasoning"):
            out["text"] = fields.text("reasoning")
    return out


def _content(content: Any) -> str:
    """A message's content: a string, or a list of parts each with its ``text``."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for index, part in enumerate(content):
            text = part.get("text") if isinstance(part, dict) else None
            if not isinstance(text, str):
                raise Unmappable("a content part holds no text (an image or a file?); name a field with --text-from",
                                 ("content", index))
            texts.append(text)
        return "\n".join(texts)
    raise Unmappable("`content` is neither text nor a list of text parts", ("content",))
