"""Time a full CLI round (load, validate, rules, solve, JSON) on N generated records.

    python benchmarks/cli_round.py --records 10000
    python benchmarks/cli_round.py --records 1000000 --cross-check none --trace none --repeat 1

Prints the CLI's own stage timings, the best wall and CPU time and the peak memory (max RSS) of a run.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

POLICY = """apiVersion: memsolve/v1
kind: MemoryPolicy
metadata: {name: bench}
tenant: t
context: {now: 1000}
budget: {tokens: %d}
rules:
  - freshness: {default_ttl: 900}
  - latest_key: {}
solver: {engine: dp, cross_check: %s}
"""


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=10000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cross-check", default="cp-sat", choices=["cp-sat", "none"])
    parser.add_argument("--trace", default="full", choices=["full", "excluded", "none"])
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from generators import memory

    tokens, utility, budget = memory(args.records, 1)
    with tempfile.TemporaryDirectory() as folder:
        records = Path(folder) / "records.jsonl"
        with records.open("w") as handle:
            for i in range(args.records):
                levels = dict(zip(("raw", "summary", "abstraction", "keywords"),
                                  ({"tokens": int(t), "utility": round(float(u), 4)}
                                   for t, u in zip(tokens[i], utility[i], strict=True)), strict=True))
                handle.write(json.dumps({"id": f"m{i}", "tenant": "t", "timestamp": i % 1000, "key": f"k{i % 7000}",
                                         "representations": levels}, separators=(",", ":")) + "\n")
        policy = Path(folder) / "policy.yaml"
        policy.write_text(POLICY % (budget, args.cross_check))
        times, peaks, cpu = [], [], []
        for run in range(args.repeat):
            out = Path(folder) / f"out{run}.json"
            start = time.perf_counter()
            proc = subprocess.Popen([sys.executable, "-m", "memsolve", "--policy", str(policy), "--records",
                                     str(records), "--format", "json", "--out", str(out), "--timings", "--trace",
                                     args.trace], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            stdout, stderr = proc.communicate()
            times.append(time.perf_counter() - start)
            usage = resource.getrusage(resource.RUSAGE_CHILDREN)
            peaks.append(usage.ru_maxrss / 1024)
            cpu.append(usage.ru_utime + usage.ru_stime - sum(cpu))  # this run's share of the children's time
            if proc.returncode != 0:
                print(stderr)
                return 1
            print(stderr.strip())
        print(f"{args.records} records, cross-check {args.cross_check}, trace {args.trace}: best wall "
              f"{min(times):.3f} s over {args.repeat} runs (CPU {min(cpu):.3f} s: less sensitive to a busy machine), "
              f"peak memory {max(peaks):.0f} MB "
              f"(result {out.stat().st_size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
