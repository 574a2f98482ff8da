"""Simulated conversations: many rounds through the same stateful code path as ``--state``.

A rounds file is JSON Lines: each line is one round's new records (a list, or an object with
``records`` and optional context such as ``now``). Records accumulate: round t sees every
record of rounds 1..t, as an agent's memory grows with its conversation.
"""

from __future__ import annotations

import csv
import io
import json
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..context import Context
from ..errors import InputError, Location, shown
from ..policies.model import Policy
from ..records import load_records
from ..source import load_document
from .state import RoundRow, StateStore


@dataclass(frozen=True)
class Batch:
    records: tuple[Mapping[str, Any], ...]
    now: Any = None
    where: Location | None = None


def load_rounds(path: str | Path) -> list[Batch]:
    """Read a rounds file; a malformed line is an input error at its file:line."""
    doc, _ = load_document(path, fmt="jsonl")
    batches = []
    for index, item in enumerate(doc.data):
        where = doc.locate((index,))
        if isinstance(item, list):
            batches.append(Batch(tuple(item), None, where))
        elif isinstance(item, dict) and isinstance(item.get("records"), list):
            extra = set(item) - {"records", "now"}
            if extra:
                raise InputError(f"unknown field `{shown(sorted(extra)[0])}` in a round; expected `records`, `now`",
                                 where)
            batches.append(Batch(tuple(item["records"]), item.get("now"), where))
        else:
            raise InputError("each line must be a list of records or an object with `records`", where)
    return batches


def run_simulation(policy: Policy, batches: Sequence[Batch], *, agent: str = "simulation") -> list[RoundRow]:
    """Run every batch as one round, in a throw-away state file; return the trajectory."""
    rows: list[RoundRow] = []
    seen: list[Mapping[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="memsolve-sim-") as folder:
        store = StateStore(Path(folder) / "state.db")
        for batch in batches:
            seen.extend(batch.records)
            records = load_records(list(seen))
            mine = records.view(policy.tenant)  # another tenant's bad record is only counted
            if mine.invalid:
                bad = mine.invalid[0]
                raise InputError(f"round {len(rows) + 1}: record `{shown(bad.id)}`: {bad.error.message}",
                                 batch.where)
            context = Context(now=batch.now) if batch.now is not None else None
            rows.append(RoundRow.of(store.round(policy, records, context, agent=agent)))
    return rows


def trajectory_csv(rows: Sequence[RoundRow]) -> str:
    levels = sorted({level for r in rows for level in r.levels})
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["t", "queue", "lambda", "tokens_used", "budget", "occupancy", "objective", "queue_after",
                     *[f"level_{name}" for name in levels]])
    for r in rows:
        writer.writerow([r.round, r.queue_before, r.lam, r.tokens_used, r.budget, r.occupancy, r.objective,
                         r.queue_after,
                         *[r.levels.get(name, 0) for name in levels]])
    return buffer.getvalue()


def trajectory_json(policy: Policy, rows: Sequence[RoundRow]) -> str:
    """The trajectory as JSON: the policy, its target occupancy alpha, one object per round."""
    payload = {"policy": policy.name, "alpha": policy.pricing.alpha, "trajectory": [r.trajectory_dict() for r in rows]}
    return json.dumps(payload, indent=2) + "\n"
