"""Explain one record: every rule's verdict, and what would change its allocation (computed).

For an eligible record the thresholds are exact, at this round's price per token:

- utility: level j of record i enters the optimum once its utility rises by more than
  Δ_j = OPT − OPT(i forced to j); below that, any allocation using j is worth less than OPT;
- budget: the smallest budget at which the tie-rule optimum gives record i level j, found on
  the dense DP's value tables (every capacity from 0 up to the budget where everything fits);
- shadow price: what one token more (and one token less) of budget is worth, OPT(B+1) − OPT(B)
  and OPT(B) − OPT(B−1), and the LP relaxation's multiplier λ* when reductions ran.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .. import pipeline
from ..context import Context
from ..errors import InputError, shown
from ..policies.model import Policy
from ..records import RecordSet
from ..result import TraceEntry
from ..solver import dp, engines
from ..solver.instance import Instance, scale

MAX_SCAN_CELLS = 20_000_000  # DP cells the budget scan may use


@dataclass(frozen=True)
class Explanation:
    id: str
    outcome: str
    level: str | None
    entry: TraceEntry
    utility_thresholds: dict[str, float | None] = field(default_factory=dict)
    budget_thresholds: dict[str, int | None] = field(default_factory=dict)
    shadow_price: dict[str, float | None] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "outcome": self.outcome, "level": self.level,
            "trace": self.entry.to_dict(),
            "what_would_change_it": {
                "utility_increase_above": self.utility_thresholds,
                "smallest_budget": self.budget_thresholds,
                "shadow_price": self.shadow_price,
                "notes": self.notes,
            },
        }


def explain(policy: Policy, records: RecordSet, record_id: str, context: Context | None = None) -> Explanation:
    """Why ``record_id`` got its outcome, and the thresholds that would change it."""
    done = pipeline.run(policy, records, context)
    entry = done.result.entry(record_id)
    if entry is None:  # the same answer for an id of another tenant: it is not in this tenant's records
        raise InputError(f"no record `{shown(record_id)}` in the records")
    allocation = entry.allocation
    if allocation is None:
        rule = next(r for r in entry.rules if not r.passed)
        return Explanation(record_id, entry.outcome, None, entry, notes=[
            f"excluded by `{rule.rule}`: {rule.reason}; the allocation never saw it, so no budget or "
            "utility changes it: only the rule's inputs (see evidence) can"])
    level = allocation.level if allocation.selected else None
    inst = done.prepared.compiled.instance
    row = allocation.row
    names = done.prepared.compiled.levels
    best = _optimum(inst)
    utility: dict[str, float | None] = {}
    for j in range(inst.k):
        if not inst.mask[row, j] or names[j] == level:
            continue
        forced = _forced(inst, row, j)
        utility[names[j]] = None if forced is None else max(0.0, best - forced)
    budgets, notes = _budget_thresholds(inst, row, names)
    return Explanation(record_id, entry.outcome, level, entry, utility, budgets, _shadow(inst, best), notes)


def _optimum(inst: Instance) -> float:
    return engines.run(inst, "dp", "none", compare_greedy=False).solution.objective


def _forced(inst: Instance, row: int, level: int) -> float | None:
    """OPT when ``row`` must take ``level``: its value plus the best of the others on what is left."""
    size = int(inst.tokens[row, level])
    if size > inst.budget or inst.max_records == 0:
        return None
    others = np.arange(inst.n) != row
    rest = Instance(inst.tokens[others], inst.utility[others], inst.mask[others], inst.budget - size, inst.price,
                    None if inst.max_records is None else inst.max_records - 1)
    return float(inst.utility[row, level] - inst.price * size) + _optimum(rest)


def _budget_thresholds(inst: Instance, row: int, names: tuple[str, ...]) -> tuple[dict[str, int | None], list[str]]:
    top = int(np.where(inst.mask, inst.tokens, 0).max(axis=1).sum()) if inst.n else 0
    notes: list[str] = []
    if inst.n * (top + 1) > MAX_SCAN_CELLS or inst.max_records is not None:
        notes.append("budget thresholds skipped: the scan is too large or a count limit applies")
        return {}, notes
    wide = replace(inst, budget=top)
    scaled = scale(wide)
    table = dp.tables(wide, scaled)
    found: dict[str, int | None] = {names[j]: None for j in range(inst.k) if inst.mask[row, j]}
    fewest = 0
    for b in range(top + 1):
        if table.frontier[b] > table.frontier[fewest]:
            fewest = b
        level = int(dp.reconstruct(wide, table, fewest)[row])
        if level >= 0 and names[level] in found and found[names[level]] is None:
            found[names[level]] = b  # the first budget that gives the record this level
    notes.append(f"at this round's price of {inst.price:.6g} per token")
    return found, notes


def _shadow(inst: Instance, best: float) -> dict[str, float | None]:
    values: dict[str, float | None] = {}
    for delta, name in ((1, "gain_one_more_token"), (-1, "loss_one_less_token")):
        budget = inst.budget + delta
        # + 0.0 turns a -0.0 into 0.0
        values[name] = None if budget < 0 else (_optimum(replace(inst, budget=budget)) - best) * delta + 0.0
    return values


def render_text(ex: Explanation) -> str:
    lines = [f"{ex.id}: {ex.outcome}" + (f" at {ex.level}" if ex.level else "")]
    for r in ex.entry.rules:
        mark = "pass" if r.passed else "FAIL"
        lines.append(f"  [{mark}] {r.rule}: {r.reason}")
    if ex.entry.allocation is not None:
        decided = ex.entry.allocation.decided_by
        if decided:
            how = "bound (no other level can reach the optimum)" if decided == "bound" else "exact search of the core"
            lines.append(f"  decided by {how}")
    if ex.utility_thresholds:
        lines.append("  would enter at a level if its utility there rose by more than:")
        for level, value in ex.utility_thresholds.items():
            lines.append(f"    {level}: " + ("never fits the budget" if value is None else f"{value:.6g}"))
    if ex.budget_thresholds:
        lines.append("  smallest budget at which it gets each level:")
        for level, value in ex.budget_thresholds.items():
            lines.append(f"    {level}: " + ("never (at this price)" if value is None else str(value)))
    if ex.shadow_price:
        lines.append("  shadow price of the budget: "
                     + ", ".join(f"{k.replace('_', ' ')} {v:.6g}" for k, v in ex.shadow_price.items() if v is not None))
    lines.extend(f"  note: {n}" for n in ex.notes)
    return "\n".join(lines) + "\n"
