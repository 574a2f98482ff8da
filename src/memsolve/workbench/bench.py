"""What the page shows, computed in Python from the real engine; the page only renders it.

One call, :func:`evaluate`, takes the policy text of the editor (and the knob fields the user
just changed), writes the knobs into the text (:mod:`.knobs`), loads it with the CLI's loader,
and runs the CLI's pipeline on the records the workbench was started with: the result itself
(``Result.to_json``), exact and greedy side by side (:class:`memsolve.ci.compare.Comparison`),
the frontier, and the four stages of seed 004 as rows. Nothing here decides an outcome; it sorts
the engine's own trace into stages for display.

Tenant privacy (DESIGN §9): the rows are the result's trace, which holds only the tenant's
records; a record's full text is looked up in the tenant's view of the records
(:meth:`RecordSet.view`), never outside it. Other tenants are a count.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import pipeline
from ..ci.compare import Comparison
from ..errors import InputError, Location, MemsolveError, SolverError
from ..policies.load import policy_from_text
from ..policies.model import Policy
from ..records import Record, RecordSet, load_records
from ..result import Result
from ..source import STDIN, read_stream, read_text
from . import knobs
from .labelled import Labelled, coverage, load_labelled

STAGES = ("stored", "scope", "ranking", "tray")
_RELEVANCE = "relevance"


@dataclass(frozen=True)
class Bench:
    """The workbench's fixed inputs: the policy file it opened and the records it runs on."""

    policy_file: str  # names the policy in error lines, as the CLI does
    policy_text: str  # the file as read at start: the editor's first text
    records_file: str
    records: RecordSet
    labelled: Labelled | None = None  # labelled queries for the supporting-fact counter


def open_bench(policy_path: str, records_path: str | None = None, labelled_path: str | None = None) -> Bench:
    """Read and check the policy and the records as ``memsolve --policy P [--records R]`` would,
    and the labelled set if one is named. ``-`` is standard input, read once: the policy's text
    is the editor's first text, so it is kept as read."""
    if records_path == STDIN:  # "save as policy" writes a file that names the records by path
        raise InputError("--records - is standard input; the workbench's saved policy names its records file: "
                         "name a file")
    if policy_path == STDIN:
        file, text = "<stdin>", read_stream()
    else:
        file, text = policy_path, read_text(policy_path)[0]
    policy = policy_from_text(text, file)
    source = records_path or policy.records
    if source is None:
        raise InputError("no records: pass --records or set `records:` in the policy", policy.locate("records"))
    labelled = load_labelled(labelled_path) if labelled_path else None
    return Bench(file, text, str(Path(source).resolve()), load_records(source), labelled)


def error_of(error: MemsolveError, data: Any = None) -> dict[str, Any]:
    """An error as the CLI prints it (one line), with where it is and the knob it belongs to."""
    if isinstance(error, InputError):
        line = f"error: {error.render()}"
        where = {"line": error.line, "column": error.column, "path": error.path}
        field = knobs.field_of(data, error.path) if data is not None and error.path else None
        # a fact the run lacks is named by its CLI flag (`needs a query (--query)`): the knob that gives it
        flag = next((k for k in ("query", "tenant") if f"(--{k})" in error.message), None)
        field = field or flag
    else:
        line, where, field = f"error: {error}", {"line": None, "column": None, "path": ""}, None
    return {"message": line, **where, "field": field, "exit_code": 3 if isinstance(error, SolverError) else 2}


def evaluate(bench: Bench, text: str, edits: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The page's data for the policy ``text`` after the knob ``edits``: always a mapping with the
    (possibly rewritten) ``yaml`` and either the run's sections or one ``error``."""
    try:
        data = knobs.load(text, bench.policy_file)
    except InputError as error:
        return {"yaml": text, "knobs": None, "error": error_of(error)}
    for name, value in (edits or {}).items():
        try:
            knobs.apply(data, name, value)
        except InputError as error:
            # a field the form sent wrong (no file or line to name): the message alone
            return {"yaml": text, "knobs": knobs.read(data),
                    "error": {**error_of(error), "message": f"error: {error.message}", "field": name}}
    if edits:
        text = knobs.dump(data)
    page: dict[str, Any] = {"yaml": text, "knobs": knobs.read(data)}
    try:
        policy = policy_from_text(text, bench.policy_file)
        return {**page, **_run(bench, policy)}
    except MemsolveError as error:
        return {**page, "error": error_of(error, data)}


def _run(bench: Bench, policy: Policy) -> dict[str, Any]:
    result = pipeline.solve(policy, bench.records)
    engine = policy.solver.engine
    exact = result if engine != "greedy" else pipeline.solve(policy, bench.records, engine="cp-sat")
    greedy = result if engine == "greedy" else pipeline.solve(policy, bench.records, engine="greedy")
    data = json.loads(result.to_json())
    try:
        frontier: Any = [{"budget": b, "objective": v} for b, v in pipeline.frontier(policy, bench.records)]
    except SolverError as error:
        frontier = {"error": str(error)}
    tenant = policy.tenant or bench.records.context.tenant
    view = _view(policy, bench.records.view(tenant), result, data)
    query = policy.context.query or bench.records.context.query
    picks = {"exact": [s.id for s in exact.selected], "greedy": [s.id for s in greedy.selected]}
    return {
        "result": data,
        "result_json": result.to_json(),  # the CLI's bytes, for the page's JSON pane
        "view": view,
        "compare": Comparison(exact, greedy).to_dict(),
        "supporting": coverage(bench.labelled, query, [row["id"] for row in view["rows"]], picks),
        "frontier": frontier,
        "tenant": tenant,
    }


def _view(policy: Policy, seen: RecordSet, result: Result, data: Mapping[str, Any]) -> dict[str, Any]:
    """The trace as table rows, each with the stage where its record left (or reached the tray)."""
    kinds = {rule.id: rule.type for rule in policy.rules}
    excluded = {e["id"]: e for e in data["excluded"]}
    dropped = {d["id"]: d for d in data["dropped"]}
    chosen = {s["id"]: s for s in data["selected"]}
    rows = []
    for entry in data["trace"]:
        rid, outcome = entry["id"], entry["outcome"]
        record = _record(seen, entry.get("position"), rid)
        relevance = next((r["evidence"] for r in entry.get("rules", [])
                          if kinds.get(r["rule"]) == _RELEVANCE and "evidence" in r), {})
        age = next((r["evidence"].get("age") for r in entry.get("rules", [])
                    if kinds.get(r["rule"]) == "max_age" and "evidence" in r), None)
        rule = reason = None
        if outcome in ("excluded", "invalid"):
            rule, reason = excluded.get(rid, {}).get("rule", outcome), excluded.get(rid, {}).get("reason", "")
        elif outcome == "dropped":
            reason = dropped.get(rid, {}).get("reason", "")
        stage = ("tray" if outcome == "selected" else "packing" if outcome == "dropped"
                 else "ranking" if kinds.get(rule or "") == _RELEVANCE else "scope")
        rows.append({
            "id": rid, "outcome": outcome, "stage": stage, "rule": rule, "reason": reason,
            "store": record.store if record else None, "session": record.session if record else None,
            "key": record.key if record else None, "age": age,
            "text": _text(record) or (chosen[rid]["text"] if rid in chosen else None),  # the full text
            "chosen_text": chosen[rid]["text"] if rid in chosen else None,  # the selected level's, for the prompt
            "similarity": relevance.get("similarity"), "score": relevance.get("score"),
            "level": chosen[rid]["level"] if rid in chosen else None,
            "tokens": chosen[rid]["tokens"] if rid in chosen else None,
        })
    ranked = sorted((r for r in rows if r["stage"] in ("tray", "packing")),
                    key=lambda r: -(r["score"] if r["score"] is not None else -1.0))
    return {"rows": rows, "ranked": [r["id"] for r in ranked], "other_tenants": data["other_tenants"],
            "empty": _why_empty(rows, data) if not data["selected"] else None}


def _record(seen: RecordSet, position: Any, rid: str) -> Record | None:
    """The tenant's record at a trace position (positions count the tenant's records only)."""
    if not isinstance(position, int) or not 0 <= position < len(seen.records):
        return None
    record = seen.records[position]
    return record if isinstance(record, Record) and record.id == rid else None


def _text(record: Record | None) -> str | None:
    if record is None:
        return None
    return record.text or next((level.text for level in record.levels if level.text), None)


def _why_empty(rows: list[dict[str, Any]], data: Mapping[str, Any]) -> list[str]:
    """An empty tray in words: where every record of the tenant left, by rule."""
    lines = []
    if not rows:
        lines.append("no record of this tenant was read")
    scope = Counter(r["rule"] for r in rows if r["stage"] == "scope")
    if scope:
        lines.append("scope filters excluded " + ", ".join(f"{n} by {rule}" for rule, n in sorted(scope.items())))
    ranking = [r for r in rows if r["stage"] == "ranking"]
    if ranking:
        lines.append(f"ranking excluded {len(ranking)} ({ranking[0]['reason']}" +
                     (", …)" if len({r['reason'] for r in ranking}) > 1 else ")"))
    for row in rows:
        if row["stage"] == "packing":
            lines.append(f"{row['id']} reached packing and was dropped: {row['reason']}")
    if data["other_tenants"]:
        lines.append(f"{data['other_tenants']} record(s) of other tenants are counted, never shown")
    return lines


def save(bench: Bench, text: str) -> str:
    """The editor's policy as a file that ``memsolve --policy FILE`` runs to the page's result:
    its ``records:`` names the workbench's records file by absolute path (a saved file lives
    elsewhere than the policy it came from)."""
    data = knobs.load(text, bench.policy_file)
    policy_from_text(text, bench.policy_file)  # only a valid policy is saved
    if not isinstance(data, dict):
        raise InputError("a policy must be a mapping", Location(bench.policy_file))
    data["records"] = bench.records_file
    return knobs.dump(data)
