"""Simulated conversations: the queue settles near alpha within the hard budget; bad rounds files."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from ..conftest import write


def test_simulate_settles_near_alpha_within_the_hard_budget(tmp_path: Path, cli) -> None:
    out = tmp_path / "t.json"
    plot = tmp_path / "t.svg"
    result = cli("simulate", "--policy", "policies/conversation.yaml", "--rounds-file",
                 "examples/rounds/conversation.jsonl", "--out", out, "--plot", plot, "--format", "json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(out.read_text())
    rows = data["trajectory"]
    assert len(rows) == 40 and plot.read_bytes().startswith(b"<?xml")
    assert all(r["tokens_used"] <= r["budget"] for r in rows)  # the hard budget holds every round
    late = [r["occupancy"] for r in rows[-20:]]
    assert abs(sum(late) / len(late) - data["alpha"]) < 0.1
    for before, after in zip(rows, rows[1:], strict=False):  # Q_{t+1} = max(0, Q_t + G_t/B − α)
        assert after["queue"] == pytest.approx(max(0.0, before["queue"] + before["occupancy"] - 0.8))
        assert after["lambda"] == pytest.approx(1000.0 * after["queue"] / math.sqrt(after["t"]))
    csv_out = tmp_path / "t.csv"
    assert cli("simulate", "--policy", "policies/conversation.yaml", "--rounds-file",
               "examples/rounds/conversation.jsonl", "--out", csv_out).exit_code == 0
    assert csv_out.read_text().startswith("t,queue,lambda,tokens_used")


def test_simulate_bad_rounds_file(tmp_path: Path, cli) -> None:
    bad = write(tmp_path, "r.jsonl", '[{"id": "a", "timestamp": 0, "tokens": 1, "utility": 1}]\n{"recs": []}\n')
    result = cli("simulate", "--policy", "policies/conversation.yaml", "--rounds-file", bad)
    assert result.exit_code == 2 and f"{bad}:2" in result.stderr


def test_another_tenants_bad_record_never_stops_a_simulation(tmp_path: Path, cli) -> None:
    policy = write(tmp_path, "p.yaml", "apiVersion: memsolve/v1\nkind: MemoryPolicy\nmetadata: {name: p}\n"
                                       "tenant: team-a\nbudget: {tokens: 50}\n")
    rounds = write(tmp_path, "rounds.jsonl", json.dumps({"now": 5, "records": [
        {"id": "a1", "tenant": "team-a", "timestamp": 1, "tokens": 3, "utility": 1.0},
        {"id": "b-secret-plan", "tenant": "team-b", "timestamp": 1, "tokens": -7}]}) + "\n")
    result = cli("simulate", "--policy", policy, "--rounds-file", rounds, "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert "b-secret" not in result.stdout + result.stderr
