"""Fault injection for the state store: kill -9 at random points across many rounds.

    python fuzz/state_faults.py --rounds 200

Several processes run rounds (two agents, and two processes on the same agent) while this
script kills them with SIGKILL at random moments. After every kill the file is checked:
SQLite integrity, and for each key a gap-free history whose last queue is the stored queue,
so every state is either the old or the new round, never a mix.
"""

from __future__ import annotations

import argparse
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from memsolve.rounds.state import StateStore  # noqa: E402

LOOP = """
import sys, memsolve
from memsolve.rounds.state import StateStore
p = memsolve.load_policy("policies/team-a.yaml")
r = memsolve.load_records(p.records)
s = StateStore(sys.argv[1])
print("ready", flush=True)
while True:
    s.round(p, r, agent=sys.argv[2])
"""


def consistent(db: Path) -> int:
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    store = StateStore(db)
    total = 0
    for key in store.keys():
        state = store.load(key)
        rounds = [h.round for h in state.history]
        assert rounds == list(range(1, state.round)), (key, rounds, state.round)
        if state.history:
            assert abs(state.queue - state.history[-1].queue_after) < 1e-12
            for before, after in zip(state.history, state.history[1:], strict=False):
                assert abs(after.queue_before - before.queue_after) < 1e-12
        total += len(rounds)
    return total


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--kills", type=int, default=60)
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    kills = checks = 0
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "state.db"
        done = 0
        while done < args.rounds or kills < args.kills:
            procs = [subprocess.Popen([sys.executable, "-c", LOOP, str(db), agent], cwd=ROOT, stdout=subprocess.PIPE,
                                      text=True)
                     for agent in ("alpha", "alpha", "beta")]
            for proc in procs:  # killed while running rounds, not while importing (a busy machine starts slowly)
                assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
            time.sleep(rng.uniform(0.05, 1.0))
            for proc in procs:
                time.sleep(rng.uniform(0, 0.05))
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                kills += 1
            if db.exists():
                now = consistent(db)
                checks += 1
                assert now >= done, "a committed round was lost"
                done = now
            print(f"rounds {done}, kills {kills}", flush=True)
    print(f"{done} rounds, {kills} kill -9, {checks} consistency checks, lost or mixed states: 0")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
