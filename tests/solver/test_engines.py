"""The engine registry: names, the engine a result names for its allocation, failures as statuses."""

from __future__ import annotations

import pytest

import memsolve
from memsolve.solver import engines, make_instance
from memsolve.solver.cpsat import solve_cpsat
from memsolve.solver.instance import FAILED

from ..conftest import make_policy, rec, solve

RECORDS = [rec("a", tokens=4, utility=8.0), rec("b", tokens=2, utility=3.0), rec("c", tokens=3, utility=3.0)]


def test_the_registry_names_every_engine_and_refuses_others() -> None:
    assert list(engines.ENGINES) == ["cp-sat", "dp", "greedy"]
    assert [e.exact for e in engines.ENGINES.values()] == [True, True, False]
    with pytest.raises(memsolve.InputError, match="unknown engine `simplex`; expected one of cp-sat, dp, greedy"):
        engines.engine_named("simplex")


@pytest.mark.parametrize(("solver", "asked", "allocated_by"), [
    ("{engine: cp-sat, cross_check: dp}", "cp-sat", "dp"),  # the DP's tie-rule allocation is reported
    ("{engine: cp-sat, cross_check: none}", "cp-sat", "cp-sat"),
    ("{engine: dp, cross_check: cp-sat}", "dp", "dp"),
    ("{engine: greedy, cross_check: dp}", "greedy", "greedy"),
])
def test_the_result_names_the_engine_that_produced_the_allocation(solver: str, asked: str, allocated_by: str) -> None:
    result = solve(make_policy(f"budget: {{tokens: 6}}\nsolver: {solver}\n"), RECORDS, now=0)
    assert (result.solver.engine, result.solver.allocated_by) == (asked, allocated_by)
    data = result.to_dict()["solver"]
    assert (data["engine"], data["allocated_by"]) == (asked, allocated_by)


def test_a_cp_sat_breakdown_is_a_status_then_a_solver_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from ortools.sat.python import cp_model

    monkeypatch.setattr(cp_model.CpSolver, "Solve", lambda self, model, *args: cp_model.MODEL_INVALID)
    inst = make_instance([[4], [2]], [[8.0], [3.0]], 6)
    failed = solve_cpsat(inst)
    assert failed.status == FAILED and "MODEL_INVALID" in failed.detail and failed.bound is None
    tied = make_instance([[3], [3], [3]], [[3.0], [3.0], [3.0]], 5)  # no reduction fixes these: CP-SAT runs
    with pytest.raises(memsolve.SolverError, match="cp-sat failed: CP-SAT returned MODEL_INVALID"):
        engines.run(tied, "cp-sat", "none")
