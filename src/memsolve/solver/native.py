"""The compiled kernel module (``_kernel.c``), when this install built it and it is not switched off.

Built by ``pip install`` when a C compiler is present; without one (or with
``MEMSOLVE_KERNEL=numpy`` in the environment) every engine runs on numpy and gives the same
tie-rule allocations, slower (except where a count-limited core needs the compiled counted DP's
larger state limits: :mod:`.kernel`). Every solver module that has a C fast path asks here.
"""

from __future__ import annotations

import os
from types import ModuleType

try:
    from . import _kernel as _built
except ImportError:  # pragma: no cover - depends on the install having a C compiler
    _built = None


def built() -> bool:
    """The install compiled the kernel (whether or not it is switched off)."""
    return _built is not None


# os.environ keeps its items encoded in a dict it updates (CPython); reading that dict spares every call
# the KeyError os.environ.get raises and catches for a variable that is not set (a microsecond, a
# tenth of a small solve_arrays call). Where os.environ is not that mapping (another Python, or one
# replaced, as mock.patch("os.environ", ...) does), os.environ.get reads it.
_SWITCH = "MEMSOLVE_KERNEL"
_ENVIRON = os.environ
_DATA = getattr(_ENVIRON, "_data", None)
_FAST = isinstance(_DATA, dict) and hasattr(_ENVIRON, "encodekey") and hasattr(_ENVIRON, "decodevalue")
_SWITCH_KEY = _ENVIRON.encodekey(_SWITCH) if _FAST else None


def _switch() -> str:
    if not _FAST or os.environ is not _ENVIRON:
        return os.environ.get(_SWITCH, "")
    raw = _DATA.get(_SWITCH_KEY)
    return "" if raw is None else _ENVIRON.decodevalue(raw)


def enabled() -> bool:
    """The kernel is built and not switched off by ``MEMSOLVE_KERNEL=numpy``."""
    return _built is not None and _switch().lower() != "numpy"


def module() -> ModuleType | None:
    """The compiled module when enabled, else None."""
    return _built if enabled() else None


_SUMS_MATCH: bool | None = None


def sums_like_numpy() -> bool:
    """The compiled module sums float64 arrays to the same float as this numpy (pairwise
    summation): checked once, on lengths around every block boundary, before a sum taken in C
    is reported in place of numpy's (the one-call path of ``solve_arrays``)."""
    global _SUMS_MATCH
    if _SUMS_MATCH is None:
        module = _built
        _SUMS_MATCH = module is not None and hasattr(module, "sum")
        if _SUMS_MATCH:
            import numpy as np

            for n in (0, 1, 7, 8, 9, 100, 127, 128, 129, 130, 255, 256, 257, 1000, 4099, 8191, 8193, 20_000, 70_001):
                # values spread over six orders of magnitude, from two low-discrepancy sequences
                # (numpy.random would cost every process its import, ~4 ms)
                steps = np.arange(1, n + 1)
                values = (steps * 0.6180339887498949 % 1.0) * 10.0 ** (steps * 0.7548776662466927 % 1.0 * 6.0 - 3.0)
                if module.sum(values) != float(values.sum()):
                    _SUMS_MATCH = False
                    break
    return _SUMS_MATCH


def describe() -> str:
    """Which exact kernel this install runs, for ``memsolve --version``."""
    if enabled():
        return "compiled kernel"
    return "numpy kernel: " + ("MEMSOLVE_KERNEL=numpy" if built() else "not compiled at install")
