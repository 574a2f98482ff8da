"""memsolve: governed, exact allocation of an LLM agent's memories into its context window.

    policy = memsolve.load_policy("policies/team-a.yaml")
    records = memsolve.load_records("examples/shared.jsonl")
    result = memsolve.solve(policy, records, memsolve.Context(now=1000))
    print(result.to_json())
"""

from .api import solve
from .context import Context
from .errors import InputError, MemsolveError, SolverError, StateError
from .policies.load import load_policy, policy_from_text
from .policies.model import Policy
from .records import Record, RecordSet, load_records
from .result import Result
from .solver import ArraySolution, solve_arrays
from .state import StateStore

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
