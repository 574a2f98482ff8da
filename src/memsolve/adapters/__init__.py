"""Records from where agent memories already live: mem0, LangGraph stores, Letta, Graphiti (DESIGN §12).

    imported = memsolve.adapters.from_langgraph(store.search(("acme",)), ttl="30m")
    selector = memsolve.Selector("policies/p.yaml", list(imported.records))

Each ``from_SOURCE(items, **choices)`` takes the source's own objects or their serialized form
and returns an :class:`Imported`: the records (mappings in the records-file shape), and what the
summary line says. The choices are the fields of :class:`Options`. Source fields no record field
takes go to ``metadata``; an item that cannot be mapped is an :class:`~memsolve.errors.InputError`
naming its position (``skip_unmappable=True`` leaves it out and counts it instead).
:func:`mapping_table` renders every source's mapping (the README's table) from the source
modules' ``MAPPING`` data.
"""

from __future__ import annotations

from collections.abc import Iterable
from types import ModuleType
from typing import Any

from . import graphiti, langgraph, letta, mem0
from ._mapping import FIELDS, Imported, Options, Skipped, convert, read_export

SOURCES: dict[str, ModuleType] = {module.SOURCE: module for module in (mem0, langgraph, letta, graphiti)}

__all__ = ["SOURCES", "Imported", "Options", "Skipped", "from_graphiti", "from_langgraph", "from_letta",
           "from_mem0", "import_file", "import_items", "mapping_table"]


def import_items(source: str, items: Iterable[Any], options: Options | None = None) -> Imported:
    """Records from the items of ``source`` (a key of :data:`SOURCES`)."""
    return convert(_adapter(source), items, options or Options())


def import_file(source: str, file: str, options: Options | None = None) -> Imported:
    """Records from an export file (JSON or JSON Lines; ``-`` is standard input); errors name the
    item's position and its line in the file."""
    adapter = _adapter(source)
    items, locate = read_export(file, source)
    return convert(adapter, items, options or Options(), locate, owned=True)


def from_mem0(items: Iterable[Any], **choices: Any) -> Imported:
    """Records from mem0 memories (``get_all()`` / ``search()`` results)."""
    return import_items("mem0", _items(items), Options(**choices))


def from_langgraph(items: Iterable[Any], **choices: Any) -> Imported:
    """Records from LangGraph store ``Item``/``SearchItem`` objects or their ``dict()``."""
    return import_items("langgraph", _items(items), Options(**choices))


def from_letta(items: Iterable[Any], **choices: Any) -> Imported:
    """Records from Letta passages and messages (client models or their JSON)."""
    return import_items("letta", _items(items), Options(**choices))


def from_graphiti(items: Iterable[Any], **choices: Any) -> Imported:
    """Records from Graphiti entity edges and episodic nodes (models or ``model_dump``)."""
    return import_items("graphiti", _items(items), Options(**choices))


def mapping_table() -> str:
    """The mapping of every source as one Markdown table (memsolve field per row, source per column)."""
    sources = list(SOURCES.values())
    lines = ["| memsolve | " + " | ".join(module.SOURCE for module in sources) + " |",
             "|---" * (len(sources) + 1) + "|"]
    for name in FIELDS[:-1]:
        lines.append(f"| {name} | " + " | ".join(module.MAPPING[name] for module in sources) + " |")
    lines.append("| metadata | " + " | ".join("every other field" for _ in sources) + " |")
    return "\n".join(lines) + "\n"


def _items(items: Any) -> Any:
    """A mem0-style result object (``{"results": [...]}``) holds its items; anything else is them."""
    if isinstance(items, dict):
        for name in ("results", "items", "memories"):
            if isinstance(items.get(name), list):
                return items[name]
    return items


def _adapter(source: str) -> ModuleType:
    if source not in SOURCES:
        from ..errors import InputError, unknown

        raise InputError(unknown(source, SOURCES, "import source"))
    return SOURCES[source]
