"""Evidence recall of greedy packing vs the exact knapsack, on a small labelled conversation.

    python benchmarks/relevance_eval.py [--temperature 0.05] [--budget 20]

Every turn is a record (one `raw` level, tokens = words, utility from relevance). For each
question the three packings run on the same eligible set; recall = evidence turns selected /
evidence turns. `exact, flat` uses a very high temperature, so utilities are nearly equal: the
knapsack then maximizes the number of turns — the failure DESIGN §4 measured.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import memsolve

ROOT = Path(__file__).resolve().parents[1]
POLICY = """apiVersion: memsolve/v1
kind: MemoryPolicy
metadata: {{name: relevance-eval}}
context: {{now: 100}}
budget: {{tokens: {budget}}}
fidelity: [raw]
rules:
  - relevance: {{recency_weight: 0}}
utility: {{from: relevance, temperature: {temperature}, retention: {{raw: 1.0}}}}
solver: {{engine: dp, cross_check: none}}
"""


def recall(budget: int, temperature: float, engine: str) -> tuple[float, float]:
    """(mean evidence recall, mean turns selected) over the labelled questions."""
    data = json.loads((ROOT / "examples/relevance/labelled.json").read_text())
    records = memsolve.load_records([{"id": t["id"], "timestamp": 0, "text": t["text"]} for t in data["turns"]])
    policy = memsolve.policy_from_text(POLICY.format(budget=budget, temperature=temperature))
    hits, count = [], []
    for q in data["questions"]:
        result = memsolve.solve(policy, records, memsolve.Context(query=q["query"]), engine=engine)
        chosen = {s.id for s in result.selected}
        hits.append(len(chosen & set(q["evidence"])) / len(q["evidence"]))
        count.append(len(chosen))
    return sum(hits) / len(hits), sum(count) / len(count)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budget", type=int, default=20)
    parser.add_argument("--temperature", type=float, default=0.05)
    args = parser.parse_args()
    rows = [("greedy (rank by score, skip, continue)", recall(args.budget, args.temperature, "greedy")),
            (f"exact, sharpened (T={args.temperature:g})", recall(args.budget, args.temperature, "dp")),
            ("exact, flat (T=1000)", recall(args.budget, 1000.0, "dp"))]
    print(f"budget {args.budget} words")
    for name, (r, n) in rows:
        print(f"{name:45s} recall {r:.3f}   turns selected {n:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
