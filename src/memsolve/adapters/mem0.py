"""mem0 memories: ``Memory.get_all()`` and ``Memory.search()`` output (``{"results": [...]}``),
or the platform's export, one memory per item."""

from __future__ import annotations

from typing import Any

from ._mapping import Fields, Options

SOURCE = "mem0"
TENANT_FIELDS = ("user_id",)  # where an item names its tenant
STORE_FIELD = "agent_id"  # a source value --store replaces (kept in metadata then)
# memsolve field → where a mem0 memory holds it (the README's table is rendered from this)
MAPPING = {
    "id": "`id`",
    "tenant": "`user_id`",
    "store": "`agent_id`, else `semantic`",
    "session": "`run_id`",
    "key": "`--key-from metadata.FIELD`",
    "timestamp": "`updated_at`, else `created_at`",
    "ttl": "`--ttl`",
    "text": "`memory`",
    "score": "`score` (search results)",
}


def map_item(fields: Fields, options: Options, chosen: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"id": fields.text("id")}
    if "tenant" not in chosen:
        out["tenant"] = fields.tenant(options, *TENANT_FIELDS)
    out["store"] = (fields.text(STORE_FIELD) if options.store is None else fields.peek(STORE_FIELD)) or "semantic"
    out["session"] = fields.text("run_id")
    path, when = fields.first("updated_at", "created_at")
    if path is not None:
        out["timestamp"] = fields.time(when, path)[0]
    if "text" not in chosen:
        out["text"] = fields.text("memory")
    out["score"] = fields.take("score")
    return out
