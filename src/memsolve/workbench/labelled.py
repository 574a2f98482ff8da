"""Labelled queries (DESIGN §11) for the seed's supporting-fact counter (DESIGN §14).

A labelled set names, per query, the record ids that hold what the query needs::

    kind: LabelledQueries
    queries:
      - {query: "database timeout after deploy", relevant: [M3]}

With one loaded (``memsolve workbench --labelled FILE``), the page counts how many of the
current query's labelled ids the tray covers, for the exact allocation and for greedy side by
side. A level covers an id when its record is that id. Only ids of the tenant in view are named;
labelled ids outside its view are counted, never named (DESIGN §9).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..source import load_document

KIND = "LabelledQueries"


@dataclass(frozen=True)
class Labelled:
    """The labelled queries of one file: query text → the relevant record ids."""

    file: str
    relevant: Mapping[str, tuple[str, ...]]


def load_labelled(path: str | Path) -> Labelled:
    doc, _ = load_document(path)
    data = doc.data
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise doc.error(("kind",), f"a labelled set is a mapping with `kind: {KIND}`")
    queries = data.get("queries")
    if not isinstance(queries, list):
        raise doc.error(("queries",), "expected a list of {query, relevant} mappings")
    relevant: dict[str, tuple[str, ...]] = {}
    for index, item in enumerate(queries):
        if not isinstance(item, dict) or not isinstance(item.get("query"), str):
            raise doc.error(("queries", index, "query"), "expected a mapping with a `query` text")
        ids = item.get("relevant")
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise doc.error(("queries", index, "relevant"), "expected a list of record ids")
        if item["query"] in relevant:
            raise doc.error(("queries", index, "query"), "this query is labelled twice")
        relevant[item["query"]] = tuple(ids)
    return Labelled(str(path), relevant)


def coverage(labelled: Labelled | None, query: str | None, in_view: Iterable[str],
             picks: Mapping[str, Iterable[str]]) -> dict[str, Any] | None:
    """The supporting-fact counter for ``query``: per engine in ``picks`` (its selected ids),
    how many labelled ids it covers; None without a labelled set."""
    if labelled is None:
        return None
    if query is None or query not in labelled.relevant:
        return {"labelled": False, "file": Path(labelled.file).name}
    ids = labelled.relevant[query]
    visible = set(in_view)
    seen = [i for i in ids if i in visible]
    return {
        "labelled": True, "file": Path(labelled.file).name, "total": len(ids),
        "in_view": seen, "outside_view": len(ids) - len(seen),
        "covered": {engine: [i for i in seen if i in set(chosen)] for engine, chosen in picks.items()},
    }
