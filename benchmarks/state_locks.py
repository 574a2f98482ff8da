"""PostgreSQL state: the transaction-scoped advisory lock against the row lock (on demand).

Worker processes run rounds through :class:`memsolve.StateStore` on a PostgreSQL server (a
throw-away one started here, or ``--state postgresql://…``), with every worker on one key (all
rounds wait for each other), and with each worker on a key of its own (no waiting); both with
keys that exist already and with new keys (a first round: the row lock inserts a placeholder).
Two measures per case: full rounds (read, solve a small record set, write) and lock-only
transactions (begin, take the key's lock, commit: the cost of the lock itself).

    python benchmarks/state_locks.py [--workers 4] [--rounds 200] [--state postgresql://...]

Prints a table: rounds (or transactions) per second over all workers, and the median and 95th
percentile of one round's time.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _worker(address: str, lock: str, agents: list[str], rounds: int, only_lock: bool, queue) -> None:
    import memsolve
    from memsolve.rounds.state import AgentKey, StateStore

    policy = memsolve.load_policy(ROOT / "tests/data/fleet/policy.yaml")
    records = memsolve.load_records(ROOT / "tests/data/fleet/records/agent-1.json")
    context = memsolve.Context(tenant="acme")
    store = StateStore(address, lock=lock)
    times = []
    for i in range(rounds):
        agent = agents[i % len(agents)]
        start = time.perf_counter()
        if only_lock:
            with store.transaction(write=True, lock=AgentKey("fleet", "acme", agent)):
                pass
        else:
            store.round(policy, records, context, agent=agent)
        times.append(time.perf_counter() - start)
    store.close()
    queue.put(times)


def measure(address: str, lock: str, workers: int, rounds: int, shared: bool, fresh: bool,
            only_lock: bool) -> tuple[float, float, float]:
    """(per second over all workers, median s, p95 s)."""
    tag = uuid.uuid4().hex[:8]
    if shared:
        keys = [[f"{tag}-shared-{i}" if fresh else f"{tag}-shared"] for i in range(workers)]
        if fresh:  # every round a new key, shared by all: worker w's i-th round uses key i
            keys = [[f"{tag}-new-{i}" for i in range(rounds)] for _ in range(workers)]
    else:
        keys = [[f"{tag}-own-{w}-{i}" for i in range(rounds)] if fresh else [f"{tag}-own-{w}"]
                for w in range(workers)]
    if not fresh:  # the keys exist before the clock starts
        _warm(address, {k for ks in keys for k in ks})
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(address, lock, keys[w], rounds, only_lock, queue))
             for w in range(workers)]
    start = time.perf_counter()
    for p in procs:
        p.start()
    times = [t for _ in procs for t in queue.get()]
    for p in procs:
        p.join()
    wall = time.perf_counter() - start
    times.sort()
    return len(times) / wall, statistics.median(times), times[int(0.95 * (len(times) - 1))]


def _warm(address: str, agents: set[str]) -> None:
    import memsolve
    from memsolve.rounds.state import StateStore

    policy = memsolve.load_policy(ROOT / "tests/data/fleet/policy.yaml")
    records = memsolve.load_records(ROOT / "tests/data/fleet/records/agent-1.json")
    with StateStore(address) as store:
        for agent in sorted(agents):
            store.round(policy, records, memsolve.Context(tenant="acme"), agent=agent)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=200, help="rounds per worker")
    parser.add_argument("--state", help="a postgresql:// address (default: a throw-away server)")
    args = parser.parse_args()
    if args.state:
        run(args.state, args)
    else:
        from tests.rounds.pg import fresh_schema, server

        with server() as address:
            run(fresh_schema(address), args)


def run(address: str, args: argparse.Namespace) -> None:
    print(f"{args.workers} worker processes x {args.rounds} each; PostgreSQL at {address.split('?')[0]}")
    print(f"{'measure':<11} {'keys':<22} {'lock':<9} {'per s':>8} {'median ms':>10} {'p95 ms':>8}")
    for only_lock in (True, False):
        for shared, fresh in ((True, False), (False, False), (False, True)):
            for lock in ("advisory", "row"):
                rate, median, p95 = measure(address, lock, args.workers, args.rounds, shared, fresh, only_lock)
                keys = ("one key, all workers" if shared else "a key per worker") + (", new" if fresh else "")
                print(f"{'lock only' if only_lock else 'round':<11} {keys:<22} {lock:<9} {rate:8.0f} "
                      f"{median * 1000:10.2f} {p95 * 1000:8.2f}", flush=True)


if __name__ == "__main__":
    main()
