"""Fuzz the loaders: policies (YAML) and records (JSON, JSON Lines, YAML).

    python fuzz/fuzz_loaders.py -atheris_runs=100000     # with atheris (coverage-guided)
    python fuzz/fuzz_loaders.py --runs 100000            # without: seeded random mutation

The invariant: a file is either accepted or refused with memsolve's InputError (exit 2 in the
CLI). Any other exception is a crash: the input is saved under fuzz/crashes/ to become a test.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import memsolve  # noqa: E402

SEEDS = [
    (ROOT / "policies/team-a.yaml", ".yaml", "policy"),
    (ROOT / "policies/incidents.yaml", ".yaml", "policy"),
    (ROOT / "examples/ch15/base.json", ".json", "records"),
    (ROOT / "examples/incidents/records.json", ".json", "records"),
    (ROOT / "examples/shared.json", ".json", "records"),
    (ROOT / "fuzz/seeds/shared.jsonl", ".jsonl", "records"),  # examples/shared.json's records, one a line
    (ROOT / "fuzz/seeds/incidents.jsonl", ".jsonl", "records"),
]
PIECES = [b"{", b"}", b"[", b"]", b":", b",", b"-", b'"', b"'", b"&a", b"*a", b"!!python/object", b"\n", b"\t",
          b" ", b"0", b"-1", b"1e999", b"NaN", b"null", b"true", b"\xff", b"\xc3\xa9", b"9" * 30, b"---", b"%YAML",
          # the hostile classes of the privacy and hardening issue
          b'"2026-13-01T00:00:00Z"', b'"2026-02-30T12:00:00Z"', b'"2026-11-30T09:00:60Z"', b'"0000-01-01T00:00:00Z"',
          b'"2026-11-30T09:00:00+24:00"', b'"0001-01-01T00:00:00+01:00"', "\"٢٠٢٦-11-30T09:00:00Z\"".encode(),
          b'"\\ud800"', b'"\\udfff\\ud800"', b"1.7e308", b"1e-300", b"5e-324", b"[" * 80, b'"tenant": "team-b"',
          b'"tenant": 7', b'"id": "a-db-arch"', b'"tokens": -1']


def target(data: bytes, suffix: str, kind: str, folder: Path) -> None:
    path = folder / f"input{suffix}"
    path.write_bytes(data)
    try:
        if kind == "policy":
            memsolve.load_policy(path)
        else:
            records = memsolve.load_records(path)
            policy = memsolve.policy_from_text("apiVersion: memsolve/v1\nkind: MemoryPolicy\nmetadata: {name: f}\n"
                                               "budget: {tokens: 50}\non_invalid_record: exclude\n")
            for tenant in (None, "team-a"):  # also a tenant's view of a mixed file
                try:
                    memsolve.solve(policy, records, memsolve.Context(now=10**9, tenant=tenant)).to_json().encode()
                except memsolve.InputError:
                    pass
    except memsolve.InputError as error:
        text = error.render()
        assert "\n" not in text, text


def mutate(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        at = rng.randrange(len(out) + 1)
        choice = rng.random()
        if choice < 0.35 and out:
            del out[at % len(out)]
        elif choice < 0.7:
            out[at:at] = rng.choice(PIECES)
        elif out:
            line_start = out.rfind(b"\n", 0, at) + 1
            line_end = out.find(b"\n", at)
            line_end = len(out) if line_end < 0 else line_end + 1
            out[line_start:line_start] = out[line_start:line_end]  # duplicate a line
    return bytes(out)


def run_random(runs: int, seed: int) -> int:
    rng = random.Random(seed)
    crashes = 0
    seeds = [(path.read_bytes(), suffix, kind) for path, suffix, kind in SEEDS]
    with tempfile.TemporaryDirectory() as folder:
        for i in range(runs):
            base, suffix, kind = seeds[i % len(seeds)]
            data = mutate(rng, base)
            try:
                target(data, suffix, kind, Path(folder))
            except Exception as exc:  # a crash: keep the input
                crashes += 1
                keep = ROOT / "fuzz/crashes" / f"{hashlib.sha256(data).hexdigest()[:16]}{suffix}"
                keep.parent.mkdir(exist_ok=True)
                keep.write_bytes(data)
                print(f"crash {type(exc).__name__}: {exc} -> {keep}", file=sys.stderr)
    print(f"{runs} inputs, {crashes} crashes")
    return 1 if crashes else 0


def run_atheris() -> None:
    import atheris  # type: ignore[import-not-found]

    folder = Path(tempfile.mkdtemp())
    seeds = [(path.read_bytes(), suffix, kind) for path, suffix, kind in SEEDS]

    def one(data: bytes) -> None:
        fdp = atheris.FuzzedDataProvider(data)
        base, suffix, kind = seeds[fdp.ConsumeIntInRange(0, len(seeds) - 1)]
        target(mutate(random.Random(fdp.ConsumeInt(4)), base) + fdp.ConsumeBytes(8), suffix, kind, folder)

    atheris.instrument_all()  # coverage guidance over memsolve, yaml, json and jsonschema
    atheris.Setup(sys.argv, one)
    atheris.Fuzz()


if __name__ == "__main__":
    if any(arg.startswith("-atheris") for arg in sys.argv[1:]):
        run_atheris()
    else:
        parser = argparse.ArgumentParser()
        parser.add_argument("--runs", type=int, default=100_000)
        parser.add_argument("--seed", type=int, default=1)
        raise SystemExit(run_random(parser.parse_args().runs, parser.parse_args().seed))
