"""OR-Tools CP-SAT on the scaled instance: one Boolean per offered level, one capacity row.

Parameters follow what was measured to prove optimality fastest on memory-shaped instances:
one worker (also what makes it deterministic), ``linearization_level=2``, and a hint.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import numpy as np

from .instance import FAILED, OPTIMAL, TIME_LIMIT, Instance, Scaled, Solution, make_solution, scale


def solve_cpsat(
    instance: Instance,
    scaled: Scaled | None = None,
    *,
    time_limit_s: float = 10.0,
    hint: np.ndarray | None = None,
    fallback: np.ndarray | None = None,
    fewest_tokens: bool = False,
) -> Solution:
    """Exact optimum when CP-SAT proves it in time; otherwise its best allocation, ``time_limit``
    (status ``failed`` with CP-SAT's own status in ``detail`` when it breaks down).

    When the time limit passes before CP-SAT has any allocation, ``fallback`` (a feasible
    choice, default: delete everything) is returned with status ``time_limit``.

    ``fewest_tokens``: where CP-SAT's allocation is reported (it answers for the DP), a proven
    optimum is then made the one with the fewest tokens, the tie rule's first step: a second
    solve keeps the value at the optimum and minimizes tokens, in the time left (``detail``
    says so where it runs out).
    """
    from ortools.sat.python import cp_model  # imported on use: it costs a third of a second

    scaled = scaled or scale(instance)
    model = cp_model.CpModel()
    chosen: list[list[tuple[int, Any]]] = []
    capacity, count, objective = [], [], []
    for row in range(instance.n):
        levels = []
        for level in np.flatnonzero(scaled.usable[row]).tolist():
            var = model.NewBoolVar(f"x{row}_{level}")
            levels.append((level, var))
            capacity.append(int(instance.tokens[row, level]) * var)
            objective.append(int(scaled.values[row, level]) * var)
        if levels:
            delete = model.NewBoolVar(f"d{row}")
            model.AddExactlyOne([var for _, var in levels] + [delete])
            count.append(1 - delete)
            if hint is not None:
                for level, var in levels:
                    model.AddHint(var, int(hint[row]) == level)
                model.AddHint(delete, int(hint[row]) < 0)
        chosen.append(levels)
    model.Add(sum(capacity) <= instance.budget)
    if instance.max_records is not None:
        model.Add(sum(count) <= instance.max_records)
    model.Maximize(sum(objective))

    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 0
    solver.parameters.linearization_level = 2
    solver.parameters.max_time_in_seconds = float(time_limit_s)
    started = time.perf_counter()
    status = solver.Solve(model)
    if status == cp_model.UNKNOWN:  # out of time before a first solution
        choice = np.full(instance.n, -1, dtype=np.int64) if fallback is None else np.asarray(fallback)
        solution = make_solution(instance, scaled, choice, TIME_LIMIT, "cp-sat",
                                 detail=f"time limit {time_limit_s}s reached before CP-SAT found an allocation")
        return solution  # no bound: CP-SAT proved nothing yet
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        # the empty allocation is always feasible, so this is an engine failure
        return make_solution(instance, scaled, np.full(instance.n, -1, dtype=np.int64), FAILED, "cp-sat",
                             detail=f"CP-SAT returned {solver.StatusName(status)}")

    def allocation() -> np.ndarray:
        choice = np.full(instance.n, -1, dtype=np.int64)
        for row, levels in enumerate(chosen):
            for level, var in levels:
                if solver.BooleanValue(var):
                    choice[row] = level
        return choice

    choice = allocation()
    proven = status == cp_model.OPTIMAL
    detail = "" if proven else f"time limit {time_limit_s}s reached before a proof"
    if proven and fewest_tokens:
        # the value stays at the optimum (scaled integers: exact); among those allocations, fewest tokens
        model.Add(sum(objective) == round(solver.ObjectiveValue()))
        model.ClearHints()
        for row, levels in enumerate(chosen):
            for level, var in levels:
                model.AddHint(var, int(choice[row]) == level)
        model.Minimize(sum(capacity))
        solver.parameters.max_time_in_seconds = max(float(time_limit_s) - (time.perf_counter() - started), 0.1)
        second = solver.Solve(model)
        if second in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            choice = allocation()
        if second != cp_model.OPTIMAL:
            detail = f"fewest tokens among the optima not proven within {time_limit_s}s"
    solution = make_solution(instance, scaled, choice, OPTIMAL if proven else TIME_LIMIT, "cp-sat", detail=detail)
    bound = solution.objective if proven else solver.BestObjectiveBound() / scaled.scale
    return replace(solution, bound=bound)
