"""The compiled kernel module (``_kernel.c``), when this install built it and it is not switched off.

Built by ``pip install`` when a C compiler is present; without one (or with
``MEMSOLVE_KERNEL=numpy`` in the environment) every engine runs on numpy and gives the same
tie-rule allocations, slower. Every solver module that has a C fast path asks here.
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


def enabled() -> bool:
    """The kernel is built and not switched off by ``MEMSOLVE_KERNEL=numpy``."""
    return _built is not None and os.environ.get("MEMSOLVE_KERNEL", "").lower() != "numpy"


def module() -> ModuleType | None:
    """The compiled module when enabled, else None."""
    return _built if enabled() else None


def describe() -> str:
    """Which exact kernel this install runs, for ``memsolve --version``."""
    if enabled():
        return "compiled kernel"
    return "numpy kernel: " + ("MEMSOLVE_KERNEL=numpy" if built() else "not compiled at install")
