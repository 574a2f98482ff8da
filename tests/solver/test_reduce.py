"""Reductions never remove an optimum; the reduced engines equal the dense DP, tie rule included."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from memsolve.solver import make_instance, scale
from memsolve.solver.core import reduce_instance, solve_cpsat_reduced, solve_reduced
from memsolve.solver.dp import solve_dp
from memsolve.solver.greedy import solve_greedy
from memsolve.solver.reduce import relax, split_efficiency

from .helpers import generated, instances


def _check(inst) -> None:
    scaled = scale(inst)
    dense = solve_dp(inst, scaled)
    greedy = solve_greedy(inst, scaled)
    red = reduce_instance(inst, scaled, greedy.choice)
    # the tie-rule optimum survives every reduction
    rows = np.arange(inst.n)
    kept = red.keep[rows, np.where(dense.choice >= 0, dense.choice, inst.k)]
    assert kept.all()
    assert red.upper_bound >= dense.scaled_objective - 1e-6 * (1 + abs(red.upper_bound))
    assert red.incumbent_value <= dense.scaled_objective
    reduced, _ = solve_reduced(inst, scaled, greedy.choice)
    assert reduced.status == "optimal"
    assert reduced.choice.tolist() == dense.choice.tolist()
    cp = solve_cpsat_reduced(inst, scaled, red, time_limit_s=5)
    if cp.status == "optimal":
        assert cp.scaled_objective == dense.scaled_objective
    else:  # strongly correlated cores can outlast CP-SAT's limit: then it must not claim more than it has
        assert cp.status == "time_limit" and cp.scaled_objective <= dense.scaled_objective
        assert cp.bound is None or cp.bound >= dense.objective - 1e-9 * (1 + abs(dense.objective))


@settings(max_examples=400, deadline=None)
@given(instances(max_n=6, max_k=4))
def test_reductions_keep_the_optimum_on_small_instances(inst) -> None:
    _check(inst)


@settings(max_examples=300, deadline=None)
@given(instances(max_n=6, max_k=3, integral=True))
def test_reductions_keep_the_tie_rule_optimum_with_many_ties(inst) -> None:
    _check(inst)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(["memory", "uncorrelated", "strong", "subset", "ties"]), st.integers(10, 60),
       st.integers(0, 2**31), st.sampled_from([None, None, 4, 12]))
def test_reduced_engines_equal_dense_dp_on_generated_classes(kind, n, seed, max_records) -> None:
    _check(generated(kind, n, seed, max_records))


def test_split_efficiency_matches_a_full_sort() -> None:
    rng = np.random.default_rng(3)
    for size in (10, 300, 5000, 20000):
        eff = rng.uniform(0, 10, size)
        eff[: size // 10] = 5.0  # a block of equal efficiencies
        weight = rng.integers(1, 50, size).astype(float)
        capacity = float(weight.sum() * rng.uniform(0.1, 0.9))
        order = np.argsort(-eff, kind="stable")
        cumulative = np.cumsum(weight[order])
        expected = eff[order[np.searchsorted(cumulative, capacity, side="right")]]
        assert split_efficiency(eff, weight, capacity) == expected


def test_most_memory_shaped_records_are_fixed_by_bound() -> None:
    inst = generated("memory", 2000, 11)
    scaled = scale(inst)
    red = reduce_instance(inst, scaled)
    assert red.core.size < 100  # the rest never needs search
    lp = relax(inst, scaled)
    assert lp.hull_levels + lp.lp_dominated <= int(scaled.usable.sum())


def test_cp_sat_stopped_by_its_time_limit_reports_the_reductions_bound() -> None:
    """CP-SAT on the core, stopped before it proves anything: the answer carries the reduction's
    Lagrangian bound (in objective units, with each kept level's rounding to the scaled integers),
    which the true optimum never passes."""
    for seed in range(5):
        rng = np.random.default_rng(seed)
        tokens = rng.integers(1, 100, size=(300, 4))
        utility = tokens + 10.0 + rng.normal(0, 0.3, size=tokens.shape).clip(-5, 5)
        inst = make_instance(tokens, utility, int(tokens[:, 0].sum() // 3), max_records=40)
        scaled = scale(inst)
        red = reduce_instance(inst, scaled)
        cp = solve_cpsat_reduced(inst, scaled, red, time_limit_s=1e-9)
        assert cp.status == "time_limit" and cp.bound is not None
        optimum = solve_dp(inst, scaled).objective
        assert cp.objective <= optimum <= cp.bound <= (red.upper_bound + 0.5 * inst.n) / scaled.scale

