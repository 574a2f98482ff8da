"""Allocation: the multiple-choice knapsack instance, its engines (CP-SAT, the DP and its compiled
kernel, greedy) behind one registry, the cross-check, the frontier, and compile/invert to records."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InputError
from ..records import MAX_UTILITY
from .dp import MAX_CELLS, frontier, solve_dp
from .engines import ENGINES, CrossCheck, Outcome, run
from .instance import Instance, Solution, scale


@dataclass(frozen=True)
class ArraySolution:
    """What :func:`solve_arrays` returns."""

    choice: np.ndarray  # int (n,): level index, -1 = delete
    objective: float
    tokens_used: int
    status: str  # "optimal" only when proven
    bound: float | None  # a proven upper bound on the objective (None for greedy)
    engine: str


def make_instance(
    tokens: Any,
    utility: Any,
    budget: int,
    *,
    price: float = 0.0,
    mask: Any = None,
    max_records: int | None = None,
) -> Instance:
    """Validate arrays into an :class:`Instance`; bad shapes or values raise InputError."""
    t = np.asarray(tokens)
    u = np.asarray(utility, dtype=np.float64)
    if t.ndim != 2 or u.shape != t.shape:
        raise InputError(f"tokens and utility must both be (n, k) arrays, got {t.shape} and {u.shape}")
    if t.size and not np.issubdtype(t.dtype, np.integer):
        raise InputError(f"tokens must be integers, got dtype {t.dtype}")
    t = t.astype(np.int64, copy=False)
    m = np.ones(t.shape, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    if m.shape != t.shape:
        raise InputError(f"mask must have shape {t.shape}, got {m.shape}")
    offered_t, offered_u = (t, u) if mask is None else (t[m], u[m])  # no copies without a mask
    if (offered_t < 0).any():
        raise InputError("tokens must be >= 0")
    if not np.isfinite(offered_u).all() or (offered_u < 0).any() or (offered_u > MAX_UTILITY).any():
        raise InputError(f"utilities must be finite, >= 0 and <= {MAX_UTILITY:g}")
    if isinstance(budget, bool) or int(budget) != budget or budget < 0:
        raise InputError(f"budget must be an integer >= 0, got {budget!r}")
    if not np.isfinite(price) or price < 0:
        raise InputError(f"price must be finite and >= 0, got {price!r}")
    if max_records is not None and max_records < 0:
        raise InputError(f"max_records must be >= 0, got {max_records!r}")
    return Instance(t, u if mask is None else np.where(m, u, 0.0), m, int(budget), float(price), max_records)


def solve_arrays(
    tokens: Any, utility: Any, budget: int, *, engine: str = "auto", time_limit_s: float = 10.0, **limits: Any
) -> ArraySolution:
    """Exact multiple-choice knapsack on plain arrays (levels highest fidelity first).

    Maximizes Σ (utility − price·tokens) over one level per row, delete implicit, within
    ``budget`` tokens. ``limits`` are :func:`make_instance`'s: ``price`` per token (λ_t / B in
    MemPrice), ``mask`` (the levels offered), ``max_records`` (most rows kept).
    ``engine``: ``auto`` (DP, CP-SAT when the DP table is too large), ``dp``, ``cp-sat`` or
    ``greedy`` (a baseline; status ``feasible``).
    """
    instance = make_instance(tokens, utility, budget, **limits)
    if engine == "auto":
        engine = "dp"
    outcome = run(instance, engine, "none", time_limit_s=time_limit_s, compare_greedy=False)
    s = outcome.solution
    return ArraySolution(s.choice, s.objective, s.tokens_used, s.status, s.bound, s.engine)


__all__ = [
    "ArraySolution",
    "CrossCheck",
    "ENGINES",
    "Instance",
    "MAX_CELLS",
    "Outcome",
    "Solution",
    "frontier",
    "make_instance",
    "run",
    "scale",
    "solve_arrays",
    "solve_dp",
]
