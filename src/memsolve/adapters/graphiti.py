"""Graphiti entity edges (facts) and episodic nodes (episodes), as ``model_dump(mode="json")``."""

from __future__ import annotations

from typing import Any

from ._mapping import Fields, Options, duration

SOURCE = "graphiti"
TENANT_FIELDS = ("group_id",)
STORE_FIELD = None  # the store is the kind of item, no source field
MAPPING = {
    "id": "`uuid`",
    "tenant": "`group_id`",
    "store": "`edge` (has `fact`), `episode`",
    "session": "—",
    "key": "`source_node_uuid`·`name`·`target_node_uuid` (edges)",
    "timestamp": "`valid_at`, else `created_at`",
    "ttl": "`invalid_at` − `valid_at`, else `--ttl`",
    "text": "`fact` (edges), `content` (episodes)",
    "score": "—",
}


def map_item(fields: Fields, options: Options, chosen: dict[str, Any]) -> dict[str, Any]:
    edge = fields.has("fact")
    out: dict[str, Any] = {"id": fields.text("uuid"), "store": "edge" if edge else "episode"}
    if "tenant" not in chosen:
        out["tenant"] = fields.tenant(options, *TENANT_FIELDS)
    if edge and "key" not in chosen:
        parts = [fields.peek(name) for name in ("source_node_uuid", "name", "target_node_uuid")]
        if all(isinstance(part, str) for part in parts):  # the parts stay in metadata too
            out["key"] = "·".join(parts)
    path, when = fields.first("valid_at", "created_at")
    if path is not None:
        out["timestamp"], moment = fields.time(when, path)
        if path == "valid_at" and fields.has("invalid_at"):
            out["ttl"] = duration(fields.time(fields.take("invalid_at"), "invalid_at")[1] - moment)
    if "text" not in chosen:
        out["text"] = fields.text("fact") if edge else fields.text("content")
    return out
