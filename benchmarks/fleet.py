"""memsolve batch: agents per second for one process and for a Dask LocalCluster of 1 and 2
workers (on demand).

Synthetic agents (each a records file of ``--records`` records over three stores and three
fidelity levels, seeded) under one policy (budget 2,000 tokens, the exact DP engine, the
fleet test policy's rules). One process runs :func:`memsolve.fleet.batch.solve_agent` in a loop
(what each partition does); the clusters run :func:`memsolve.fleet.batch.run_batch` against a
cluster started before the clock (its start-up is printed on its own), writing the result lines.

    python benchmarks/fleet.py [--agents 10000] [--records 1000] [--partition-size 100]

The issue's size is the default; 10,000 agents x 1,000 records write ~2.6 GB of records files
into a temporary folder (--agents 400 for a quick run).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STORES = ("semantic", "episodic", "working")


def write_fleet(folder: Path, agents: int, records: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    for n in range(agents):
        items = []
        for i in range(records):
            raw = rng.randint(20, 400)
            items.append({"id": f"m{i}", "store": STORES[i % 3], "timestamp": rng.randint(0, 1000),
                          "representations": {
                              "raw": {"tokens": raw, "utility": round(rng.uniform(1, 10), 3)},
                              "summary": {"tokens": max(2, raw // 4), "utility": round(rng.uniform(0.5, 6), 3)},
                              "keywords": {"tokens": 4, "utility": round(rng.uniform(0.1, 1), 3)}}})
        (folder / f"agent-{n:05d}.json").write_text(json.dumps({"now": 1000, "records": items}))


def policy_file(folder: Path) -> str:
    text = (ROOT / "tests/data/fleet/policy.yaml").read_text().replace("tokens: 40", "tokens: 2000")
    path = folder / "policy.yaml"
    path.write_text(text)
    return str(path)


def one_process(policy_path: str, agents: list) -> float:
    import memsolve
    from memsolve.fleet.batch import solve_agent

    policy = memsolve.load_policy(policy_path)
    start = time.perf_counter()
    for agent in agents:
        outcome = solve_agent(policy, agent)
        assert outcome.error is None, outcome.error
    return len(agents) / (time.perf_counter() - start)


def cluster(policy_path: str, agents: list, workers: int, partition_size: int, out: Path) -> tuple[float, float]:
    from distributed import LocalCluster

    from memsolve.fleet.batch import run_batch

    started = time.perf_counter()
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0") as local:
        ready = time.perf_counter()
        summary = run_batch(policy_path, agents, out, scheduler=local.scheduler_address,
                            partition_size=partition_size)
        assert summary.solved == len(agents) and not summary.errors
        rate = len(agents) / (time.perf_counter() - ready)
    return rate, ready - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=10_000)
    parser.add_argument("--records", type=int, default=1_000)
    parser.add_argument("--partition-size", type=int, default=100)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    from memsolve.fleet.batch import load_agents

    with tempfile.TemporaryDirectory(prefix="memsolve-fleet-") as tmp:
        folder = Path(tmp)
        (folder / "agents").mkdir()
        t = time.perf_counter()
        write_fleet(folder / "agents", args.agents, args.records)
        print(f"{args.agents} agents x {args.records} records written in {time.perf_counter() - t:.1f} s; "
              f"{os.cpu_count()} CPUs", flush=True)
        policy = policy_file(folder)
        agents = load_agents(folder / "agents")
        print(f"{'run':<26} {'agents/s':>9} {'start-up s':>11}")
        print(f"{'one process':<26} {one_process(policy, agents):9.1f} {'-':>11}", flush=True)
        for workers in (1, 2):
            rate, startup = cluster(policy, agents, workers, args.partition_size, folder / f"out-{workers}.jsonl")
            print(f"{f'LocalCluster, {workers} worker(s)':<26} {rate:9.1f} {startup:11.1f}", flush=True)
        outs = [(folder / f"out-{w}.jsonl").read_bytes() for w in (1, 2)]
        assert outs[0] == outs[1], "the same fleet gave different result files"


if __name__ == "__main__":
    main()
