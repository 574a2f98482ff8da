"""The compiled passes over the loader's input and its records (``_scan.c``), when this install
built them and they are not switched off.

Built by ``pip install`` beside the solver's kernel when a C compiler is present; without one
(or with ``MEMSOLVE_KERNEL=numpy`` in the environment, which switches off every compiled part)
each caller takes its numpy or Python path, which gives the same answers, slower. Read once, at
import: the callers bind the functions they use.
"""

from __future__ import annotations

import os
from types import ModuleType


def scans() -> ModuleType | None:
    """``memsolve._scan`` when built and not switched off by ``MEMSOLVE_KERNEL=numpy``, else None."""
    if os.environ.get("MEMSOLVE_KERNEL", "").lower() == "numpy":
        return None
    try:
        from . import _scan
    except ImportError:  # pragma: no cover - depends on the install having a C compiler
        return None
    return _scan
