"""memsolve.compiled: with MEMSOLVE_KERNEL=numpy no compiled scan is loaded, and a run gives the
same bytes as with them (the loader's gates, the type scan, the hash's number check, the columns
and the level table all take their numpy/Python paths)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

# the solver's kernel reads the switch at each solve, the scans at import: the switch is set for
# the import alone, so both runs solve with the same kernel and only the scans differ
SCRIPT = """
import json, os, sys
if sys.argv[3] == "numpy":
    os.environ["MEMSOLVE_KERNEL"] = "numpy"
import memsolve, memsolve.columns, memsolve.decode, memsolve.records, memsolve.source
os.environ.pop("MEMSOLVE_KERNEL", None)
policy = memsolve.policy_from_text(sys.argv[1], "p.yaml")
outs = []
for source in (sys.argv[2], json.load(open(sys.argv[2].replace(".jsonl", ".json")))):
    records = memsolve.load_records(source)
    outs.append([records.sha256, memsolve.solve(policy, records).to_json()])
print(json.dumps({"scan": "memsolve._scan" in sys.modules, "outs": outs}))
"""

POLICY = """apiVersion: memsolve/v1
kind: MemoryPolicy
metadata: {name: both}
tenant: t
context: {now: 1000, session: s1}
budget: {tokens: 400}
rules:
  - stores: {allow: [semantic, episodic]}
  - freshness: {default_ttl: 600, ttl_by_store: {episodic: 300}}
  - latest_key: {}
  - version_authority: {current_version: v2}
solver: {engine: dp, cross_check: none}
on_invalid_record: exclude
"""


def _records(n: int) -> list[dict]:
    rng = random.Random(3)
    out = []
    for i in range(n):
        item = {"id": f"m{i}", "tenant": rng.choice(["t", "t", "u"]), "timestamp": rng.randint(0, 1000),
                "store": rng.choice(["semantic", "episodic", "working"]), "key": f"k{rng.randint(0, 30)}"}
        if rng.random() < 0.3:
            item["ttl"] = rng.choice([None, 100, 2000])
        if rng.random() < 0.3:
            item.update(authority=True, version=rng.choice(["v1", "v2"]))
        if rng.random() < 0.5:
            item["representations"] = {"raw": {"tokens": rng.randint(20, 200), "utility": round(rng.random() * 9, 3)},
                                       "summary": {"text": "a short summary " * rng.randint(1, 3), "utility": 1.5},
                                       "odd": {"tokens": 5, "utility": 0.1}} if rng.random() < 0.2 else \
                {"raw": {"tokens": rng.randint(20, 200), "utility": round(rng.random() * 9, 3)},
                 "summary": {"tokens": rng.randint(5, 40), "utility": round(rng.random() * 3, 3)}}
        else:
            item.update(text="words of a record " * rng.randint(1, 5), utility=rng.randint(0, 7))
        out.append(item)
    return out


def _run(folder: Path, scans: str) -> dict:
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MEMSOLVE_KERNEL")}
    proc = subprocess.run([sys.executable, "-c", SCRIPT, POLICY, str(folder / "r.jsonl"), scans], capture_output=True,
                          text=True, env=clean, check=True)
    return json.loads(proc.stdout)


def test_the_numpy_paths_give_the_compiled_paths_bytes(tmp_path: Path) -> None:
    items = _records(300)
    (tmp_path / "r.jsonl").write_text("".join(json.dumps(item) + "\n" for item in items))
    (tmp_path / "r.json").write_text(json.dumps(items))
    compiled, numpy_only = _run(tmp_path, "compiled"), _run(tmp_path, "numpy")
    assert compiled["scan"] or os.environ.get("CI") != "true"  # CI builds it
    assert not numpy_only["scan"]
    assert compiled["outs"] == numpy_only["outs"]
    written = compiled["outs"][0][1]
    assert '"outcome": "excluded"' in written and '"outcome": "selected"' in written
    assert "is not in the policy" in written  # a level no fidelity names: the level table's unknown rows
