"""The multiple-choice knapsack instance every engine solves, and the solution they return.

Engines never see record ids: they see rows of levels (highest fidelity first) with token
sizes and utilities, a capacity, a price per token and an optional count limit. Delete is
implicit in every row (0 tokens, 0 utility, choice ``-1``).

Objective: maximize Σ_i (u_ij − price · s_ij) subject to Σ_i s_ij ≤ budget (and at most
``max_records`` rows not deleted).

Scaling: the exact engines work on integers v_ij = round(S · (u_ij − price · s_ij)) with one
scale S per instance (:func:`scale`), so that CP-SAT and the DP solve the *same* integer
problem and must agree exactly. The reported objective is recomputed in floating point from
the chosen levels. A level enters only with a strictly positive scaled value: a level worth
nothing or less is never better than deleting the record.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import native

OPTIMAL = "optimal"  # proven optimal
FEASIBLE = "feasible"  # a valid allocation, optimality not claimed (greedy)
TIME_LIMIT = "time_limit"  # stopped by the time limit before a proof
SKIPPED = "skipped"  # the engine declined (instance too large for it)
FAILED = "failed"  # the engine broke down (its detail says how); never reported as an allocation

# Values are scaled so that the sum of the best value of every row stays below 2**52:
# exact in float64 and far from CP-SAT's int64 limits.
MAX_SCALE = 1_000_000.0
_VALUE_ROOM = float(2**52)


@dataclass(frozen=True)
class Instance:
    """A multiple-choice knapsack: n rows × k levels, highest fidelity first."""

    tokens: np.ndarray  # int64 (n, k)
    utility: np.ndarray  # float64 (n, k)
    mask: np.ndarray  # bool (n, k): the level is offered
    budget: int
    price: float = 0.0  # per token: λ_t / B
    max_records: int | None = None

    @property
    def n(self) -> int:
        return int(self.tokens.shape[0])

    @property
    def k(self) -> int:
        return int(self.tokens.shape[1])

    def net(self) -> np.ndarray:
        """Utility less the price of its tokens, per level."""
        return self.utility - self.price * self.tokens


class Scaled:
    """The integer form of an instance that the exact engines solve: ``values`` int64 (n, k);
    ``usable`` bool (n, k), offered, fits the budget, strictly positive value; ``scale``. (A
    plain class: a dataclass costs ~0.7 ms to create at import, in every CLI process.)"""

    __slots__ = ("values", "usable", "scale")

    def __init__(self, values: np.ndarray, usable: np.ndarray, scale: float) -> None:
        self.values, self.usable, self.scale = values, usable, scale


def scale(instance: Instance) -> Scaled:
    """Integer values at one scale S ≤ 10**6 chosen so that no sum can overflow.

    The compiled kernel, when built, does the same IEEE operations in one pass each (the
    integers are identical; tests/solver/test_kernel.py checks it).
    """
    module = native.module()
    n, k = instance.n, instance.k
    if module is not None:
        tokens, utility = np.ascontiguousarray(instance.tokens), np.ascontiguousarray(instance.utility)
        mask = np.ascontiguousarray(instance.mask).view(np.uint8)
        best = np.empty(n)
        module.scale(n, k, tokens, utility, mask, instance.price, instance.budget, 0.0, best, np.empty(0, np.uint8))
    else:
        net = instance.net()
        offered = instance.mask & (instance.tokens <= instance.budget)
        best = np.where(offered, np.maximum(net, 0.0), 0.0).max(axis=1, initial=0.0)
    total = float(best.sum()) if n else 0.0
    factor = MAX_SCALE if total * MAX_SCALE < _VALUE_ROOM else _VALUE_ROOM / total
    if module is not None:
        values = np.empty((n, k), dtype=np.int64)
        usable = np.empty((n, k), dtype=np.uint8)
        module.scale(n, k, tokens, utility, mask, instance.price, instance.budget, factor, values, usable)
        return Scaled(values, usable.view(bool), factor)
    values = np.rint(np.where(offered, net, 0.0) * factor).astype(np.int64)
    return Scaled(values, offered & (values > 0), factor)


@dataclass(frozen=True)
class Solution:
    """One engine's answer: a level index per row (-1 = delete) and what it is worth."""

    choice: np.ndarray  # int64 (n,)
    objective: float
    utility: float
    tokens_used: int
    status: str
    engine: str
    bound: float | None = None  # a proven upper bound on the objective, when the engine has one
    scaled_objective: int | None = None
    detail: str = field(default="")

    @property
    def count(self) -> int:
        return int((self.choice >= 0).sum())


def chosen(choice: np.ndarray, k: int) -> np.ndarray:
    """Flat indices (row·k + level) of the chosen levels, in row order; deleted rows have none."""
    rows = np.flatnonzero(choice >= 0)
    return rows * k + choice[rows]


def evaluate(instance: Instance, choice: np.ndarray, at: np.ndarray | None = None) -> tuple[float, float, int]:
    """Objective, utility and tokens of a choice (sums in row order: deterministic)."""
    at = chosen(choice, instance.k) if at is None else at
    utility = instance.utility.ravel()[at]
    tokens = instance.tokens.ravel()[at]
    net = utility - instance.price * tokens
    return float(net.sum()), float(utility.sum()), int(tokens.sum())


def scaled_value(scaled: Scaled, choice: np.ndarray, at: np.ndarray | None = None) -> int:
    at = chosen(choice, scaled.values.shape[1]) if at is None else at
    return int(scaled.values.ravel()[at].sum())


def make_solution(
    instance: Instance,
    scaled: Scaled | None,
    choice: np.ndarray,
    status: str,
    engine: str,
    bound: float | None = None,
    detail: str = "",
) -> Solution:
    choice = np.asarray(choice, dtype=np.int64)
    at = chosen(choice, instance.k)
    objective, utility, tokens = evaluate(instance, choice, at)
    return Solution(
        choice=choice,
        objective=objective,
        utility=utility,
        tokens_used=tokens,
        status=status,
        engine=engine,
        bound=bound,
        scaled_objective=None if scaled is None else scaled_value(scaled, choice, at),
        detail=detail,
    )


def check_feasible(instance: Instance, choice: np.ndarray) -> None:
    """Assert the hard constraints; an engine that breaks them has a bug, not a bad input."""
    at = chosen(choice, instance.k)
    assert instance.mask.ravel()[at].all(), "chose a level that is not offered"
    assert int(instance.tokens.ravel()[at].sum()) <= instance.budget, "over budget"
    if instance.max_records is not None:
        assert len(at) <= instance.max_records, "over the count limit"
