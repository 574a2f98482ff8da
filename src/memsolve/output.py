"""Writing output files: atomically (a temporary file renamed into place), never silently
replacing an existing file (``force`` to replace)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from .errors import InputError, Location


def write_atomic(path: str | Path, write: Callable[[str], None], *, force: bool = False, suffix: str = ".tmp") -> None:
    """Call ``write(temporary path)``, then rename the file to ``path``; on any failure the
    temporary file goes and ``path`` is untouched."""
    target = Path(path)
    if target.exists() and not force:
        raise InputError("file exists; pass --force to replace it", Location(str(path)))
    directory = target.parent if str(target.parent) else Path(".")
    if not directory.is_dir():
        raise InputError("folder does not exist", Location(str(directory)))
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=suffix, dir=directory)
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, target)
    finally:
        Path(tmp).unlink(missing_ok=True)


def write_text(path: str | Path, text: str, *, force: bool = False) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically, synced to disk before the rename."""

    def write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())

    write_atomic(path, write, force=force)
