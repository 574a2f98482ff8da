"""CP-SAT's allocation where it answers for the DP: the optimum with the fewest tokens (the tie
rule's first step), checked by exhaustive search and on the shape that reaches it."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings

from memsolve.solver import make_instance, scale, solve_arrays
from memsolve.solver.cpsat import solve_cpsat

from .helpers import feasible_choices, instances, tie_key


@settings(max_examples=200, deadline=None)
@given(instances(max_n=6, integral=True))
def test_fewest_tokens_is_the_tie_rules_first_step(inst) -> None:
    scaled = scale(inst)
    key = tie_key(inst, scaled)
    best = max(k for k in map(key, feasible_choices(inst)) if k is not None)
    solution = solve_cpsat(inst, scaled, fewest_tokens=True)
    assert (solution.scaled_objective, -solution.tokens_used) == best[:2]
    assert solution.status == "optimal" and solution.detail == ""


def test_a_count_limit_over_levels_all_worth_the_same_keeps_the_lightest() -> None:
    # every level nets 7 at a price of 1 per token: any five rows are an optimum, and the kernel's
    # price on the count finds none; CP-SAT answers (found in review: 1,544 tokens where 5 do)
    rng = np.random.default_rng(0)
    tokens = rng.integers(1, 1000, size=(2000, 3))
    answer = solve_arrays(tokens, tokens + 7.0, int(tokens.sum() // 3), price=1.0, max_records=5)
    assert answer.status == "optimal" and answer.objective == answer.bound
    assert answer.tokens_used == int(np.sort(tokens.min(axis=1))[:5].sum())
    inst = make_instance(tokens, tokens + 7.0, int(tokens.sum() // 3), price=1.0, max_records=5)
    assert solve_cpsat(inst, fewest_tokens=True).tokens_used == answer.tokens_used


def test_the_second_solve_runs_only_where_cp_sats_allocation_is_reported(monkeypatch) -> None:
    # beside a proven DP (the default cross-check), the DP's allocation is reported: CP-SAT's
    # fewest-tokens solve would be lost time (found in review: Selector turns 12 -> 16 ms)
    from memsolve.solver import cpsat, engines

    asked: list[bool] = []
    original = cpsat.solve_cpsat

    def counting(*args, fewest_tokens=False, **kwargs):
        asked.append(fewest_tokens)
        return original(*args, fewest_tokens=fewest_tokens, **kwargs)

    monkeypatch.setattr("memsolve.solver.core.solve_cpsat", counting)
    tied = make_instance([[3, 1], [3, 1], [3, 2]], [[3.0, 1.0], [3.0, 1.0], [3.0, 2.0]], 5)
    checked = engines.run(tied, "cp-sat", "dp", compare_greedy=False)
    assert checked.solution.engine == "dp" and True not in asked
    # alone, CP-SAT's allocation is reported: the second solve runs where an optimum may leave tokens
    # unused (2 tokens worth 3, or 1 token worth 3: the bound, 4.5 at λ = 1.5, is 1.5 above them) ...
    either = make_instance([[2], [1]], [[3.0], [3.0]], 2)
    alone = engines.run(either, "cp-sat", "none", compare_greedy=False)
    assert alone.solution.engine == "cp-sat" and asked[-1] is True
    assert alone.solution.tokens_used == 1  # the tie rule's fewest tokens
    # ... and not where every optimum fills the budget (each level worth 1 per token: any optimum
    # holds 5 tokens, and the bound equals the optimum)
    asked.clear()
    filled = engines.run(tied, "cp-sat", "none", compare_greedy=False)
    assert filled.solution.engine == "cp-sat" and asked == [False]
    assert filled.solution.tokens_used == checked.solution.tokens_used == 5
