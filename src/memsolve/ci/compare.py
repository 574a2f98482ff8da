"""``memsolve compare``: the greedy packing against the exact optimum on the same eligible records."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .. import pipeline
from ..context import Context
from ..policies.model import Policy
from ..records import RecordSet
from ..result import Chosen, Result


@dataclass(frozen=True)
class Comparison:
    """Both results, and the records (in input order) that either selects."""

    exact: Result
    greedy: Result

    @property
    def greedy_loses(self) -> float:
        return self.exact.objective - self.greedy.objective

    def picks(self, engine: str) -> dict[str, Chosen]:
        result = self.exact if engine == "exact" else self.greedy
        return {s.id: s for s in result.selected}

    @property
    def ids(self) -> list[str]:
        """Every record either engine selects, in input order."""
        exact, greedy = self.picks("exact"), self.picks("greedy")
        return [t.id for t in self.exact.trace if t.id in exact or t.id in greedy]

    @property
    def differ(self) -> list[str]:
        """The records the two select at different levels (or only one selects)."""
        exact, greedy = self.picks("exact"), self.picks("greedy")

        def level(picks: dict[str, Chosen], rid: str) -> str | None:
            return picks[rid].level if rid in picks else None

        return [rid for rid in self.ids if level(exact, rid) != level(greedy, rid)]

    def to_dict(self) -> dict[str, Any]:
        def side(r: Result) -> dict[str, Any]:
            return {"objective": r.objective, "utility": r.utility, "tokens_used": r.tokens_used,
                    "selected": [s.to_dict() for s in r.selected]}

        return {"exact": side(self.exact), "greedy": side(self.greedy), "greedy_loses": self.greedy_loses,
                "differ": self.differ}


def compare(policy: Policy, records: RecordSet, context: Context | None = None) -> Comparison:
    """Solve exactly (the policy's engine) and greedily over the same eligible records."""
    return Comparison(pipeline.solve(policy, records, context),
                      pipeline.solve(policy, records, context, engine="greedy"))
