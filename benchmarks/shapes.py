"""Exact at every shape? Each class at each size and budget position: proven or not, and how fast.

    python benchmarks/shapes.py                              # 1k-5k rows, every class and budget
    python benchmarks/shapes.py --sizes 2000 10000 20000 --classes strongly weakly --seeds 1 2 3

The budget sits where an exact solver is hardest: just below and above the sum of the lightest
levels (every row can keep its lightest level or almost), in the middle (the generator's own
budget), just below the sum of the heaviest, and at random. Each instance is solved by
``solve_arrays`` (the kernel, else the numpy path, else CP-SAT with ``--time-limit``); a row is
proven when the status is optimal and the bound equals the objective. CPU time of this thread
(CP-SAT's threads are not counted: its wall time is printed too). On demand, not in CI.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from generators import CLASSES, generate  # noqa: E402

from memsolve import solve_arrays  # noqa: E402

POSITIONS = ("min-1000", "min-50", "min-3", "min", "min+3", "middle", "max-3", "random")


def budget_at(position: str, tokens: np.ndarray, middle: int, rng: np.random.Generator) -> int:
    """The budget at ``position``: relative to the sum of each row's lightest or heaviest level."""
    lightest, heaviest = int(tokens.min(axis=1).sum()), int(tokens.max(axis=1).sum())
    if position == "middle":
        return middle
    if position == "random":
        return int(rng.integers(lightest // 2, heaviest + 1))
    base, _, offset = position.partition("+") if "+" in position else position.partition("-")
    sign = 1 if "+" in position else -1
    return max(0, (lightest if base == "min" else heaviest) + sign * int(offset or 0))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 2000, 5000])
    parser.add_argument("--classes", nargs="+", default=list(CLASSES), choices=list(CLASSES))
    parser.add_argument("--positions", nargs="+", default=list(POSITIONS), choices=POSITIONS)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1])
    parser.add_argument("--time-limit", type=float, default=10.0, help="CP-SAT's limit, seconds")
    args = parser.parse_args()

    print(f"{'class':<13} {'n':>6} {'budget':<9} {'seed':>4} {'status':<11} {'engine':<8} {'proven':<6} "
          f"{'cpu ms':>9} {'wall ms':>9}")
    unproven, slowest = [], (0.0, "")
    for kind in args.classes:
        for n in args.sizes:
            for seed in args.seeds:
                tokens, utility, middle = generate(kind, n, seed)
                rng = np.random.default_rng(seed)
                for position in args.positions:
                    budget = budget_at(position, tokens, middle, rng)
                    started, cpu = time.perf_counter(), time.thread_time()
                    solution = solve_arrays(tokens, utility, budget, time_limit_s=args.time_limit)
                    cpu_ms, wall_ms = 1000 * (time.thread_time() - cpu), 1000 * (time.perf_counter() - started)
                    proven = solution.status == "optimal" and solution.bound == solution.objective
                    name = f"{kind} {n} {position} seed {seed}"
                    if not proven:
                        unproven.append(name)
                    slowest = max(slowest, (wall_ms, name))
                    print(f"{kind:<13} {n:>6} {position:<9} {seed:>4} {solution.status:<11} {solution.engine:<8} "
                          f"{'yes' if proven else 'NO':<6} {cpu_ms:>9.1f} {wall_ms:>9.1f}", flush=True)
    print(f"\nnot proven: {len(unproven)}" + (f" ({', '.join(unproven)})" if unproven else ""))
    print(f"slowest: {slowest[1]} ({slowest[0]:.0f} ms wall)")
    return 1 if unproven else 0


if __name__ == "__main__":
    raise SystemExit(main())
