"""Writing output files: atomically (a temporary file renamed into place), never silently
replacing an existing file (``force`` to replace).

What the rename may replace, and what it never touches:

* a missing path is created; an existing regular file only with ``force`` (it keeps its mode);
* a symbolic link is refused, with or without ``force``: replacing the link would silently cut
  it, and writing through it (perhaps to a dangling target in another folder, planted by someone
  else in a shared folder) is how symlink attacks work. Give the link's target path instead;
* a folder, a FIFO, a device or a socket is refused (``--out /dev/null --force`` run as root
  would otherwise replace the device node with a regular file).

Any failure of the file system (permission denied, read-only file system, disk full) is an
:class:`InputError` naming the path; the temporary file goes and the target is untouched.
New files get the mode ``open()`` would give them: 0666 less the process umask (the temporary
file is created 0600, as ``tempfile.mkstemp`` creates it).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from .errors import InputError, Location


def _umask() -> int:
    """The process umask; read from /proc where it can be (setting it, even briefly, races
    with other threads creating files)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    old = os.umask(0o022)
    os.umask(old)
    return old


def make_temporary(directory: Path, prefix: str, suffix: str) -> tuple[int, str]:
    """A new file in ``directory`` (mode 0600, opened exclusively, never through a link): its
    descriptor and absolute path, as ``tempfile.mkstemp`` gives them; 48 random bits name it.
    (``tempfile`` itself imports shutil, bz2, lzma and random: 2% of a CLI round.)"""
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    folder = os.path.abspath(directory)
    for _ in range(100):
        name = os.path.join(folder, f"{prefix}{os.urandom(6).hex()}{suffix}")
        try:
            return os.open(name, flags, 0o600), name
        except FileExistsError:
            continue  # taken: another name
    raise FileExistsError(errno.EEXIST, "no free temporary file name")


def _cannot_write(path: str, exc: OSError) -> InputError:
    reason = exc.strerror or type(exc).__name__
    return InputError(f"cannot write: {reason}; nothing was written", Location(path))


def _existing_mode(target: Path, force: bool, shown: str) -> int | None:
    """The mode of the regular file ``target`` replaces (None when there is none); refuses
    links, folders and special files, and an existing file without ``force``."""
    try:
        info = target.lstat()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _cannot_write(shown, exc) from None
    if stat.S_ISLNK(info.st_mode):
        raise InputError("is a symbolic link; memsolve never writes through or replaces a link, even with "
                         "--force: give the path of the link's target", Location(shown))
    if stat.S_ISDIR(info.st_mode):
        raise InputError("is a folder, not a file", Location(shown))
    if not stat.S_ISREG(info.st_mode):
        raise InputError("is not a regular file (a device, FIFO or socket); memsolve replaces only regular "
                         "files", Location(shown))
    if not force:
        raise InputError("file exists; pass --force to replace it", Location(shown))
    return stat.S_IMODE(info.st_mode)


def _publish(tmp: str, target: Path, force: bool, shown: str) -> None:
    """Rename ``tmp`` to ``target``. Without ``force`` a hard link makes the new name, which
    fails if anything appeared at ``target`` since it was checked (no race replaces it)."""
    if force:
        os.replace(tmp, target)
        return
    try:
        os.link(tmp, target)
    except FileExistsError:
        raise InputError("file exists; pass --force to replace it", Location(shown)) from None
    except OSError as exc:
        # file systems without hard links (FAT, some network shares): check, then rename
        if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EMLINK, errno.ENOSYS):
            raise
        if os.path.lexists(target):
            raise InputError("file exists; pass --force to replace it", Location(shown)) from None
        os.replace(tmp, target)


def _sync_folder(directory: Path) -> None:
    """Make the rename durable (best effort: not every platform can open a folder)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_atomic(path: str | Path, write: Callable[[str], None], *, force: bool = False, suffix: str = ".tmp") -> None:
    """Call ``write(temporary path)``, then rename the file to ``path``; on any failure the
    temporary file goes and ``path`` is untouched."""
    shown = str(path)
    if shown.endswith((os.sep, os.altsep or os.sep)):
        raise InputError("names a folder (ends in a path separator), not a file", Location(shown))
    target = Path(path)
    mode = _existing_mode(target, force, shown)
    directory = target.parent if str(target.parent) else Path(".")
    if not directory.is_dir():
        raise InputError("folder does not exist", Location(str(directory)))
    try:
        fd, tmp = make_temporary(directory, f".{target.name}.", suffix)
    except OSError as exc:
        raise _cannot_write(shown, exc) from None
    os.close(fd)
    try:
        os.chmod(tmp, (0o666 & ~_umask()) if mode is None else mode)
        write(tmp)
        _publish(tmp, target, force, shown)
    except OSError as exc:
        raise _cannot_write(shown, exc) from None
    finally:
        Path(tmp).unlink(missing_ok=True)
    _sync_folder(directory)


def write_text(path: str | Path, text: str | Sequence[str], *, force: bool = False) -> None:
    """Write ``text`` (UTF-8; or its pieces one after another) to ``path`` atomically, synced to
    disk before the rename. The bytes are the text's own on every platform (no newline
    translation)."""

    def write(tmp: str) -> None:
        with open(tmp, "wb") as handle:
            for chunk in _chunks([text] if isinstance(text, str) else text):
                handle.write(chunk.encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())

    write_atomic(path, write, force=force)


_CHUNK = 1 << 20  # characters joined before one write: a text file's write per piece cost 1 µs each


def _chunks(pieces: Sequence[str]) -> Iterator[str]:
    """The pieces joined into runs of about ``_CHUNK`` characters (a run is never split, and
    holds one piece at least): few writes, and never the whole text twice in memory."""
    run: list[str] = []
    size = 0
    for piece in pieces:
        run.append(piece)
        size += len(piece)
        if size >= _CHUNK:
            yield "".join(run)
            run, size = [], 0
    if run:
        yield "".join(run)
