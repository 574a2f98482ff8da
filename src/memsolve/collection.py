"""Pausing Python's cyclic garbage collector while memsolve makes many small objects.

A run, a full-trace JSON text or a command allocates tens of thousands of small acyclic objects
(records, verdicts, allocations, trace entries). The cyclic collector rescans them again and
again and finds next to nothing to reclaim: it cost a third of a 10,000-record turn. Reference
counting still frees them; the collector's state is restored afterwards.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused() -> Iterator[None]:
    """No cyclic collection inside the block; the collector's previous state after it."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
