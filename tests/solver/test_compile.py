"""Compile: fidelity order, token counting, monotonicity repair with a trace."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ..conftest import make_policy, solve


def test_monotonicity_repair_is_applied_and_traced() -> None:
    records = [{"id": "a", "timestamp": 0, "representations": {
        "raw": {"tokens": 10, "utility": 2.0},
        "summary": {"tokens": 4, "utility": 5.0},
        "keywords": {"tokens": 1, "utility": 1.0}}}]
    result = solve(make_policy("budget: {tokens: 10}\n"), records, now=0)
    entry = result.entry("a")
    assert [r.to_dict() for r in entry.allocation.repairs] == [{"level": "raw", "utility_from": 2.0, "utility_to": 5.0}]
    # equal value at raw and summary: the tie rule takes fewer tokens
    assert [(s.level, s.utility) for s in result.selected] == [("summary", 5.0)]
    offered = [o.to_dict() for o in entry.allocation.offered]
    assert [o["level"] for o in offered] == ["raw", "summary", "keywords"]


def test_levels_follow_the_policy_fidelity_order() -> None:
    policy = make_policy("budget: {tokens: 10}\nfidelity: [summary, raw]\n")
    records = [{"id": "a", "timestamp": 0, "representations": {
        "raw": {"tokens": 3, "utility": 1.0}, "summary": {"tokens": 3, "utility": 2.0}}}]
    result = solve(policy, records, now=0)
    assert result.selected[0].level == "summary"
    assert [o.level for o in result.entry("a").allocation.offered] == ["summary", "raw"]


def test_values_below_the_resolution_say_so_and_larger_ones_enter() -> None:
    records = [{"id": "tiny", "timestamp": 0, "tokens": 1, "utility": 1e-7},
               {"id": "small", "timestamp": 0, "tokens": 1, "utility": 1e-5},
               {"id": "one", "timestamp": 0, "tokens": 1, "utility": 1.0}]
    result = solve(make_policy("budget: {tokens: 10}\n"), records, now=0)
    assert [s.id for s in result.selected] == ["small", "one"]  # free budget: every value above it enters
    (dropped,) = result.dropped
    assert dropped.id == "tiny" and "below the solver's resolution of 5e-07" in dropped.reason


def test_utilities_at_the_documented_maximum_solve_and_above_it_are_refused() -> None:
    import pytest

    import memsolve

    many = [{"id": f"r{i}", "timestamp": 0, "tokens": 1, "utility": 1e15} for i in range(1000)]
    result = solve(make_policy("budget: {tokens: 2000}\n"), many, now=0)
    assert len(result.selected) == 1000 and result.objective == 1e18
    with pytest.raises(memsolve.InputError, match=r"\[0\]\.utility: expected a number <= 1e\+?15"):
        solve(make_policy("budget: {tokens: 5}\n"), [{"id": "x", "timestamp": 0, "tokens": 1, "utility": 1.7e308}],
              now=0)
    with pytest.raises(memsolve.InputError, match="utilities must be finite, >= 0 and <= 1e"):
        memsolve.solve_arrays([[1]], [[1e300]], 5)


def _reason_oracle(inst, row: int, full: bool, scale: float) -> str:
    """The drop reason as it was computed record by record before it was vectorised."""
    from memsolve.policies.verdicts import number

    tokens, mask = inst.tokens[row].tolist(), inst.mask[row].tolist()
    net = [u - inst.price * t for u, t in zip(inst.utility[row].tolist(), tokens, strict=True)]
    fits = [m and t <= inst.budget for t, m in zip(tokens, mask, strict=True)]
    if not any(mask):
        return "no representation offered"
    if not any(fits):
        return f"no level fits the budget of {inst.budget} tokens"
    best = max(v for f, v in zip(fits, net, strict=True) if f)
    if best <= 0:
        return f"no level is worth its price ({number(inst.price)} per token)"
    if full:
        return f"not among the best {inst.max_records} records (count limit)"
    if best * scale <= 0.5:
        return (f"worth {best:.3g}, below the solver's resolution of {0.5 / scale:.3g} at this instance's "
                "scale (see README, Numbers)")
    return "not worth its tokens within the budget"


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 6), st.integers(0, 3), st.integers(0, 10), st.sampled_from([0.0, 0.25, 1.0]),
       st.booleans(), st.sampled_from([1e6, 10.0]), st.randoms(use_true_random=False))
def test_drop_reasons_over_rows_are_the_per_record_reasons(n, k, budget, price, full, scale, rng) -> None:
    import numpy as np

    from memsolve.solver.compile import Allocations
    from memsolve.solver.instance import Instance

    tokens = np.array([[rng.randint(0, 12) for _ in range(k)] for _ in range(n)], dtype=np.int64).reshape(n, k)
    utility = np.array([[rng.choice([0.0, 1e-9, 0.3, 2.0, 7.5]) for _ in range(k)] for _ in range(n)]).reshape(n, k)
    mask = np.array([[rng.random() < 0.7 for _ in range(k)] for _ in range(n)], dtype=bool).reshape(n, k)
    inst = Instance(tokens, utility, mask, budget, price, 2)
    compiled = type("Compiled", (), {"instance": inst})()
    allocations = Allocations(compiled, np.full(n, -1), None, full, scale)  # type: ignore[arg-type]
    rows = np.arange(n)
    assert allocations.drop_reasons(rows) == [_reason_oracle(inst, row, full, scale) for row in range(n)]
    assert [allocations.drop_reason(row) for row in rows] == [_reason_oracle(inst, row, full, scale) for row in rows]
