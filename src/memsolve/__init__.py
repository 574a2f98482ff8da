"""memsolve: governed, exact allocation of an LLM agent's memories into its context window.

    policy = memsolve.load_policy("policies/team-a.yaml")
    records = memsolve.load_records("examples/shared.json")
    result = memsolve.solve(policy, records, memsolve.Context(now=1000))
    print(result.to_json())

The stages live in :mod:`memsolve.pipeline`; the CI half in :mod:`memsolve.ci`; state across
rounds in :mod:`memsolve.rounds`; the allocation in :mod:`memsolve.solver`.

``import memsolve`` is cheap: the names below are imported on first use (PEP 562), most of them
with the pipeline (numpy, jsonschema, the solver), and so are the subpackages (``memsolve.solver``).
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (most of what this import would cost)
if TYPE_CHECKING:
    from .context import Context
    from .errors import InputError, MemsolveError, SolverError, StateError
    from .pipeline import solve
    from .policies.load import load_policy, policy_from_text
    from .policies.model import Policy
    from .records import Record, RecordSet, load_records
    from .result import Result
    from .rounds.state import StateStore
    from .selector import Selector
    from .solver import ArraySolution, solve_arrays

__version__ = "0.1.0"

# the names imported on first use, and the module each comes from
_LAZY = {
    "ArraySolution": ".solver",
    "Context": ".context",
    "InputError": ".errors",
    "MemsolveError": ".errors",
    "SolverError": ".errors",
    "StateError": ".errors",
    "Policy": ".policies.model",
    "Record": ".records",
    "RecordSet": ".records",
    "Result": ".result",
    "Selector": ".selector",
    "StateStore": ".rounds.state",
    "load_policy": ".policies.load",
    "load_records": ".records",
    "policy_from_text": ".policies.load",
    "solve": ".pipeline",
    "solve_arrays": ".solver",
}

__all__ = [
    "ArraySolution",
    "Context",
    "InputError",
    "MemsolveError",
    "Policy",
    "Record",
    "RecordSet",
    "Result",
    "Selector",
    "SolverError",
    "StateError",
    "StateStore",
    "load_policy",
    "load_records",
    "policy_from_text",
    "solve",
    "solve_arrays",
]


def __getattr__(name: str) -> object:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
    elif not name.startswith("_"):
        try:  # a subpackage or module: `memsolve.solver` after `import memsolve`, as before
            value = importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError as error:
            if error.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
