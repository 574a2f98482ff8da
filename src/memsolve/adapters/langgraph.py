"""LangGraph store items: ``Item.dict()`` and ``SearchItem.dict()`` (or the objects themselves),
as ``BaseStore.get``/``search`` return them."""

from __future__ import annotations

from typing import Any

from ._mapping import Fields, Options, Unmappable, duration, split_path

SOURCE = "langgraph"
TENANT_FIELDS = ("namespace.0",)  # with --tenant the namespace names no tenant: it is all store
STORE_FIELD = None  # the namespace stays in metadata whatever --store says
MAPPING = {
    "id": '`"/".join(namespace + [key])`',
    "tenant": "`namespace[0]` (`--tenant-from namespace.N`)",
    "store": "the other `namespace` elements, joined by `/`",
    "session": "—",
    "key": "`key`",
    "timestamp": "`updated_at`",
    "ttl": "`expires_at` − `updated_at`, else `--ttl`",
    "text": "`value.text`, `value.content` or `value.memory` (`--text-from value.FIELD`)",
    "score": "`score` (`SearchItem`)",
}
TEXT_FIELDS = ("value.text", "value.content", "value.memory")


def map_item(fields: Fields, options: Options, chosen: dict[str, Any]) -> dict[str, Any]:
    namespace = fields.peek("namespace")  # kept in metadata: its elements may hold `/`
    if not isinstance(namespace, list) or not namespace or not all(isinstance(n, str) for n in namespace):
        raise Unmappable("expected `namespace`, a non-empty list of strings", ("namespace",))
    key = fields.text("key")
    if key is None:
        raise Unmappable("a LangGraph item has no `key`", ("key",))
    out: dict[str, Any] = {"id": "/".join([*namespace, key]), "key": key}
    tenant_at: int | None = 0
    if options.tenant_from is not None:
        path = split_path(options.tenant_from)
        tenant_at = path[1] if len(path) == 2 and path[0] == "namespace" and isinstance(path[1], int) else None
    elif options.tenant is None:
        out["tenant"] = namespace[0]
    if options.tenant is not None and options.tenant_from is None:
        tenant_at = None  # a fixed tenant: the whole namespace is the store
    store = [n for i, n in enumerate(namespace) if i != tenant_at]
    out["store"] = "/".join(store) or None
    updated = fields.take("updated_at")
    if updated is not None:
        out["timestamp"], moment = fields.time(updated, "updated_at")
        expires = fields.take("expires_at")
        if expires is not None:
            out["ttl"] = duration(fields.time(expires, "expires_at")[1] - moment)
    if "text" not in chosen:
        path, text = fields.first(*TEXT_FIELDS)
        if path is not None and not isinstance(text, str):
            raise Unmappable(f"`{path}` holds no text; name the field that does with --text-from",
                             split_path(path))
        out["text"] = text
    out["score"] = fields.take("score")
    return out
