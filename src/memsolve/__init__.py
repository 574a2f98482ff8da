"""memsolve: governed, exact allocation of an LLM agent's memories into its context window.

    policy = memsolve.load_policy("policies/team-a.yaml")
    records = memsolve.load_records("examples/shared.jsonl")
    result = memsolve.solve(policy, records, memsolve.Context(now=1000))
    print(result.to_json())

The stages live in :mod:`memsolve.pipeline`; the CI half in :mod:`memsolve.ci`; state across
rounds in :mod:`memsolve.rounds`; the allocation in :mod:`memsolve.solver`.
"""

from .context import Context
from .errors import InputError, MemsolveError, SolverError, StateError
from .pipeline import solve
from .policies.load import load_policy, policy_from_text
from .policies.model import Policy
from .records import Record, RecordSet, load_records
from .result import Result
from .rounds.state import StateStore
from .solver import ArraySolution, solve_arrays

__version__ = "0.1.0"

__all__ = [
    "ArraySolution",
    "Context",
    "InputError",
    "MemsolveError",
    "Policy",
    "Record",
    "RecordSet",
    "Result",
    "SolverError",
    "StateError",
    "StateStore",
    "load_policy",
    "load_records",
    "policy_from_text",
    "solve",
    "solve_arrays",
]
