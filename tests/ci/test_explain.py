"""explain: each utility and budget threshold holds at plus or minus a step, the shadow price,
and the command on the bundled examples."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

import memsolve
from memsolve import pipeline
from memsolve.ci.explain import explain
from memsolve.solver import engines

from ..conftest import make_policy


def _records():
    return memsolve.load_records([
        {"id": "a", "timestamp": 0, "representations": {"raw": {"tokens": 6, "utility": 6.0},
                                                       "summary": {"tokens": 3, "utility": 4.0}}},
        {"id": "b", "timestamp": 0, "representations": {"raw": {"tokens": 5, "utility": 7.0},
                                                       "summary": {"tokens": 2, "utility": 3.0}}},
        {"id": "c", "timestamp": 0, "tokens": 4, "utility": 4.5},
    ])


@pytest.mark.parametrize("record_id", ["a", "b", "c"])
def test_explain_utility_thresholds_hold_at_plus_minus_a_step(record_id: str) -> None:
    policy = make_policy()
    context = memsolve.Context(now=0, budget=8)
    ex = explain(policy, _records(), record_id, context)
    prep = pipeline.prepare(policy, _records(), context)
    row = [r.id for r in prep.compiled.records].index(record_id)
    for level, delta in ex.utility_thresholds.items():
        if delta is None:
            continue
        j = prep.compiled.levels.index(level)
        for step, enters in ((1e-3, True), (-1e-3, False)):
            if delta + step < 0:
                continue
            utility = prep.compiled.instance.utility.copy()
            utility[row, j] += delta + step
            inst = replace(prep.compiled.instance, utility=utility)
            choice = engines.run(inst, "dp", "none", compare_greedy=False).solution.choice
            assert bool(choice[row] == j) == enters, (level, delta, step)


@pytest.mark.parametrize("record_id", ["a", "b", "c"])
def test_explain_budget_thresholds_are_the_smallest_budgets(record_id: str) -> None:
    policy = make_policy()
    ex = explain(policy, _records(), record_id, memsolve.Context(now=0, budget=8))
    for level, budget in ex.budget_thresholds.items():
        if budget is None:
            continue
        at = pipeline.solve(policy, _records(), memsolve.Context(now=0, budget=budget))
        assert (record_id, level) in {(s.id, s.level) for s in at.selected}
        if budget > 0:
            below = pipeline.solve(policy, _records(), memsolve.Context(now=0, budget=budget - 1))
            assert (record_id, level) not in {(s.id, s.level) for s in below.selected}


def test_explain_shadow_price_and_excluded(cli) -> None:
    ex = explain(make_policy(), _records(), "a", memsolve.Context(now=0, budget=8))
    assert ex.shadow_price["gain_one_more_token"] >= 0 and ex.shadow_price["loss_one_less_token"] >= 0
    out = cli("explain", "old-review", "--policy", "policies/ch15.yaml", "--records", "examples/ch15/base.json")
    assert out.exit_code == 0
    assert "[FAIL] version-authority: authority bound to v1, current is v2" in out.stdout
    data = json.loads(cli("explain", "review-v2", "--policy", "policies/ch15.yaml", "--records",
                          "examples/ch15/changed.json", "--format", "json").stdout)
    assert data["outcome"] == "dropped"
    assert data["what_would_change_it"]["smallest_budget"] == {"raw": 4}
    assert cli("explain", "nope", "--policy", "policies/ch15.yaml", "--records",
               "examples/ch15/base.json").exit_code == 2
