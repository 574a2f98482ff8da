"""Per-turn cost of the runtime path: Selector.select against solve_arrays on the same instance.

    python benchmarks/selector.py --sizes 1000 10000 --turns 20

Records are memory-shaped (4 levels, benchmarks/generators.py) with all rule types in the
policy (stores, sessions, max age, freshness, version authority, latest key); each turn is a
Selector.select at a moving `now` with trace="excluded". Prints the median per turn and the
ratio to solve_arrays (the exact solver alone) measured in the same run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generators import memory  # noqa: E402

import memsolve  # noqa: E402

POLICY = """apiVersion: memsolve/v1
kind: MemoryPolicy
metadata: {name: bench}
tenant: t
budget: {tokens: %d}
rules:
  - stores: {allow: [semantic, episodic, procedural, working]}
  - sessions: {include_previous: true}
  - max_age: 5000
  - freshness: {default_ttl: 4000, ttl_by_store: {working: 500}}
  - version_authority: {current_version: v2}
  - latest_key: {}
solver: {engine: dp, cross_check: none}
"""
STORES = ("semantic", "episodic", "procedural", "working")


def records(n: int) -> tuple[list[dict], object, object, int]:
    tokens, utility, budget = memory(n, 1)
    out = []
    for i in range(n):
        levels = dict(zip(("raw", "summary", "abstraction", "keywords"),
                          ({"tokens": int(t), "utility": round(float(u), 4)}
                           for t, u in zip(tokens[i], utility[i], strict=True)),
                          strict=True))
        item = {"id": f"m{i}", "tenant": "t", "timestamp": i % 1000, "store": STORES[i % 4], "session": f"s{i % 5}",
                "key": f"k{i % (n * 9 // 10)}", "representations": levels}
        if i % 50 == 0:
            item.update(authority=True, version="v2" if i % 100 else "v1")
        out.append(item)
    return out, tokens, utility, budget


def median_ms(step, turns: int) -> float:
    times = []
    for turn in range(turns):
        start = time.perf_counter()
        step(turn)
        times.append(1000 * (time.perf_counter() - start))
    return statistics.median(times)


def measure(n: int, turns: int) -> tuple[float, float, float]:
    """Median ms per turn: Selector.select, solve_arrays on the same arrays, one-shot solve from dicts."""
    items, tokens, utility, budget = records(n)
    policy = memsolve.policy_from_text(POLICY % budget, "bench.yaml")
    selector = memsolve.Selector(policy, items)
    select = median_ms(lambda turn: selector.select(now=1000 + turn, trace="excluded"), turns)
    arrays = median_ms(lambda turn: memsolve.solve_arrays(tokens, utility, budget, engine="dp"), turns)
    once = median_ms(lambda turn: memsolve.solve(policy, memsolve.load_records(items),
                                                 memsolve.Context(now=1000 + turn)), max(3, turns // 5))
    return select, arrays, once


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--turns", type=int, default=20)
    args = parser.parse_args()
    print(f"{'records':>8} {'select ms':>10} {'solve_arrays ms':>16} {'ratio':>7} {'solve() from dicts ms':>22}")
    for n in args.sizes:
        select, arrays, once = measure(n, args.turns)
        print(f"{n:>8,} {select:>10.1f} {arrays:>16.2f} {select / arrays:>6.0f}x {once:>22.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
