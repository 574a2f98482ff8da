"""Allocation: the multiple-choice knapsack instance, its engines (CP-SAT, the DP and its compiled
kernel, greedy) behind one registry, the cross-check, the frontier, and compile/invert to records."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InputError, SolverError, shown
from ..records import MAX_UTILITY
from . import native
from .dp import MAX_CELLS, frontier, solve_dp
from .engines import DENSE_CROSS_CHECK_CELLS as _DENSE_CROSS_CHECK_CELLS
from .engines import ENGINES, CrossCheck, Outcome, run
from .instance import Instance, Solution, scale
from .kernel import MAX_LEVELS

MAX_SUM = 2**62  # budgets and sums of tokens: the solvers add them in 64 bits
_ONE_CALL_ROWS = 2**22  # past this the one call saves nothing worth a row count's own checks


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
    if isinstance(budget, bool) or int(budget) != budget or not 0 <= budget <= MAX_SUM:
        raise InputError(f"budget must be an integer >= 0 and <= 2**62, got {shown(budget)}")
    # the solvers sum the tokens of levels that fit the budget over all rows in 64 bits (README,
    # "Numbers"); a level past the budget is never taken, nor summed
    largest = min(int(offered_t.max()), int(budget)) if offered_t.size else 0
    if t.shape[0] * largest > MAX_SUM:
        raise InputError(f"{t.shape[0]:,} rows of up to {largest:,} tokens: their sum could pass 2**62")
    try:
        price = float(price)
    except (TypeError, ValueError, OverflowError):
        raise InputError(f"price must be a finite number >= 0, got {shown(price)}") from None
    if not np.isfinite(price) or price < 0:
        raise InputError(f"price must be finite and >= 0, got {price!r}")
    if max_records is not None and max_records < 0:
        raise InputError(f"max_records must be >= 0, got {max_records!r}")
    return Instance(t, u if mask is None else np.where(m, u, 0.0), m, int(budget), price, max_records)


def solve_arrays(
    tokens: Any, utility: Any, budget: int, *, engine: str = "auto", time_limit_s: float = 10.0, **limits: Any
) -> ArraySolution:
    """Exact multiple-choice knapsack on plain arrays (levels highest fidelity first).

    Maximizes Σ (utility − price·tokens) over one level per row, delete implicit, within
    ``budget`` tokens. ``limits`` are :func:`make_instance`'s: ``price`` per token (λ_t / B in
    MemPrice), ``mask`` (the levels offered), ``max_records`` (most rows kept).
    ``engine``: ``auto`` (DP, CP-SAT when the DP table is too large), ``dp``, ``cp-sat`` or
    ``greedy`` (a baseline; status ``feasible``).

    With the compiled kernel, int64 tokens and float64 utilities in C order, ``auto``/``dp`` is
    one call of the kernel (checks, scaling, search, tie rule, objective); anything it declines
    takes the path through :func:`make_instance` and the engines, with the same answer.
    """
    if engine == "auto":
        engine = "dp"
    if engine == "dp":
        found = _solve_in_one_call(tokens, utility, budget, **limits)
        if found is not None:
            return found
    instance = make_instance(tokens, utility, budget, **limits)
    outcome = run(instance, engine, "none", time_limit_s=time_limit_s, compare_greedy=False)
    s = outcome.solution
    return ArraySolution(s.choice, s.objective, s.tokens_used, s.status, s.bound, s.engine)


def _solve_in_one_call(
    tokens: Any, utility: Any, budget: Any, *, price: Any = 0.0, mask: Any = None, max_records: Any = None
) -> ArraySolution | None:
    """The ``dp`` engine's answer by one call of the compiled kernel (checks, scaling, search, tie
    rule, objective), or None where the Python path answers: no kernel, arrays it would have to
    convert, an input it refuses (it words the error), or a case the kernel leaves to it (a
    binding count limit, the search's state limit, ties the dense DP orders). The allocation,
    objective and tokens are those of the Python path (tests/solver/test_one_call.py)."""
    module = native.module()
    if (
        module is None
        or type(tokens) is not np.ndarray
        or type(utility) is not np.ndarray
        or tokens.dtype != np.int64
        or utility.dtype != np.float64
        or tokens.ndim != 2
        or utility.shape != tokens.shape
        or not tokens.flags.c_contiguous
        or not utility.flags.c_contiguous
        or type(budget) is not int
        or type(price) is not float and not (type(price) is int and abs(price) <= 2**53)
        or not (max_records is None or type(max_records) is int and 0 <= max_records <= MAX_SUM)
        or not native.sums_like_numpy()
    ):
        return None
    if mask is not None:
        if type(mask) is not np.ndarray or mask.dtype != np.bool_ or mask.shape != tokens.shape:
            return None
        mask = np.ascontiguousarray(mask).view(np.uint8)
    n, k = tokens.shape
    if k > MAX_LEVELS or not 0 <= budget <= MAX_SUM or n > _ONE_CALL_ROWS or (
            n * budget > MAX_SUM and tokens.size and n * min(int(tokens.max()), budget) > MAX_SUM):
        return None  # past 64 bits: make_instance says so (the largest level is read only where it could matter)
    count = 1 if max_records is None else max_records + 1
    # as the engine's Job: when the dense DP's table is small it orders massive ties, so the
    # kernel does not run its bounded tie-rule DP to the end
    bounded_ties = n * (budget + 1) * count > _DENSE_CROSS_CHECK_CELLS
    choice = np.empty(n, dtype=np.int64)
    try:
        found = module.solve_arrays(n, k, tokens, utility, mask, budget, float(price),
                                    -1 if max_records is None else max_records, bounded_ties, MAX_UTILITY, choice)
    except RuntimeError as exc:  # the kernel's own check of its answer failed: as the engine path says it
        raise SolverError(str(exc)) from None
    if found is None:
        return None
    objective, used, _ = found
    # the frozen dataclass's __init__ sets each field through object.__setattr__ (a microsecond here,
    # a tenth of a call on 1,000 records); the same instance, its fields written at once
    solution = object.__new__(ArraySolution)
    solution.__dict__.update(choice=choice, objective=objective, tokens_used=used, status="optimal",
                             bound=objective, engine="dp")
    return solution


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
