"""memsolve.output: atomic writes that never replace silently, never follow or cut a link, never
leave a temporary file, turn every file-system failure into one InputError naming the path, and
give new files the mode open() would."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memsolve import output
from memsolve.errors import InputError
from memsolve.output import write_atomic, write_text

from .conftest import needs


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


@pytest.fixture
def umask():
    """Set the process umask for one test (restored after)."""
    saved = os.umask(0o022)
    yield lambda mask: os.umask(mask)
    os.umask(saved)


@pytest.mark.parametrize(("mask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664), (0o027, 0o640)],
                         ids=["022", "077", "002", "027"])
def test_new_files_get_the_mode_open_would_give(tmp_path: Path, umask, mask: int, mode: int) -> None:
    umask(mask)
    write_text(tmp_path / "out.json", "{}\n")
    with open(tmp_path / "by-open", "w") as handle:
        handle.write("x")
    assert stat.S_IMODE((tmp_path / "out.json").stat().st_mode) == mode
    assert stat.S_IMODE((tmp_path / "by-open").stat().st_mode) == mode


def test_force_keeps_the_mode_of_the_file_it_replaces(tmp_path: Path, umask) -> None:
    umask(0o022)
    target = tmp_path / "out.json"
    target.write_text("old")
    target.chmod(0o600)  # someone made it private: a replacement must not widen it
    write_text(target, "new", force=True)
    assert target.read_text() == "new" and stat.S_IMODE(target.stat().st_mode) == 0o600


def test_existing_file_needs_force(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    target.write_text("old")
    with pytest.raises(InputError, match="file exists; pass --force"):
        write_text(target, "new")
    assert target.read_text() == "old" and _names(tmp_path) == ["out.json"]


def test_a_file_that_appears_while_writing_is_not_replaced(tmp_path: Path) -> None:
    # the check and the rename are one step (a hard link fails on an existing name): another
    # process creating the file meanwhile keeps its file
    target = tmp_path / "out.json"

    def write(tmp: str) -> None:
        Path(tmp).write_text("ours")
        target.write_text("theirs")

    with pytest.raises(InputError, match="file exists"):
        write_atomic(target, write)
    assert target.read_text() == "theirs" and _names(tmp_path) == ["out.json"]


def test_without_hard_links_the_rename_still_works(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_links(src, dst, **kwargs):
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)  # FAT, some network shares
    write_text(tmp_path / "out.json", "x")
    assert (tmp_path / "out.json").read_text() == "x" and _names(tmp_path) == ["out.json"]
    with pytest.raises(InputError, match="file exists"):
        write_text(tmp_path / "out.json", "y")


@pytest.mark.parametrize("force", [False, True])
def test_a_dangling_symlink_is_refused_and_left_alone(tmp_path: Path, force: bool) -> None:
    link = tmp_path / "out.json"
    link.symlink_to(tmp_path / "elsewhere" / "target.json")
    with pytest.raises(InputError, match="symbolic link") as caught:
        write_text(link, "x", force=force)
    assert str(link) in str(caught.value)
    assert link.is_symlink() and os.readlink(link) == str(tmp_path / "elsewhere" / "target.json")
    assert _names(tmp_path) == ["out.json"]


def test_a_symlink_to_a_file_is_refused_even_with_force(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("keep")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    with pytest.raises(InputError, match="never writes through or replaces a link"):
        write_text(link, "x", force=True)
    assert link.is_symlink() and real.read_text() == "keep"


def test_a_symlinked_folder_above_the_file_is_fine(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "real")
    write_text(tmp_path / "alias" / "out.json", "x")
    assert (tmp_path / "real" / "out.json").read_text() == "x"


def test_folders_and_special_files_are_refused(tmp_path: Path) -> None:
    (tmp_path / "dir").mkdir()
    with pytest.raises(InputError, match="is a folder"):
        write_text(tmp_path / "dir", "x", force=True)
    with pytest.raises(InputError, match="names a folder"):
        write_text(f"{tmp_path}/new/", "x")
    assert not (tmp_path / "new").exists()
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="not a regular file"):
        write_text(fifo, "x", force=True)
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    with pytest.raises(InputError, match="folder does not exist"):
        write_text(tmp_path / "missing" / "out.json", "x")


@pytest.mark.parametrize("where", ["mkstemp", "write", "replace", "link"])
@pytest.mark.parametrize("error", [(errno.EACCES, "Permission denied"), (errno.EROFS, "Read-only file system"),
                                   (errno.ENOSPC, "No space left on device")], ids=["EACCES", "EROFS", "ENOSPC"])
def test_file_system_failures_are_one_input_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str,
                                                  error: tuple[int, str]) -> None:
    target = tmp_path / "out.json"
    force = where == "replace"
    if force:
        target.write_text("old")

    def fail(*args, **kwargs):
        raise OSError(*error)

    def write(tmp: str) -> None:
        if where == "write":
            fail()
        Path(tmp).write_text("new")

    if where == "mkstemp":
        monkeypatch.setattr(output, "make_temporary", fail)
    elif where == "replace":
        monkeypatch.setattr(os, "replace", fail)
    elif where == "link":
        monkeypatch.setattr(os, "link", fail)
    with pytest.raises(InputError) as caught:
        write_atomic(target, write, force=force)
    assert caught.value.render() == f"{target}: cannot write: {error[1]}; nothing was written"
    assert _names(tmp_path) == (["out.json"] if force else [])  # no temporary file left
    if force:
        assert target.read_text() == "old"


@needs(Path("/sys/kernel").is_dir(), "Linux sysfs")
def test_a_folder_nobody_can_write_real(tmp_path: Path) -> None:
    # sysfs takes no new files, not even from root: a real failure wherever the tests run
    with pytest.raises(InputError, match=r"^/sys/memsolve-out\.json: cannot write: "):
        write_text("/sys/memsolve-out.json", "x")


@given(st.lists(st.text(alphabet=st.sampled_from(["a", "\n", "é", "😀", "\r", "{"]), max_size=7), max_size=12),
       st.integers(min_value=1, max_value=9))
@settings(max_examples=60, deadline=None)
def test_pieces_are_written_as_their_joined_text_in_any_runs(tmp_path_factory, pieces: list[str], chunk: int) -> None:
    """write_text of pieces: the UTF-8 bytes of the pieces joined, newlines as written (no
    translation), whatever size the runs they are joined into before each write."""
    from memsolve import output

    target = tmp_path_factory.mktemp("w") / "out.json"
    before = output._CHUNK
    output._CHUNK = chunk
    try:
        write_text(target, pieces)
    finally:
        output._CHUNK = before
    assert target.read_bytes() == "".join(pieces).encode("utf-8")


def test_a_piece_that_cannot_be_encoded_leaves_nothing(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    target.write_text("old")
    with pytest.raises(UnicodeEncodeError):
        write_text(target, ["{", "\ud800", "}"], force=True)
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_a_temporary_file_is_new_private_and_named_in_its_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  ) -> None:
    monkeypatch.chdir(tmp_path)
    fd, name = output.make_temporary(Path("."), ".out.json.", ".tmp")
    os.close(fd)
    assert os.path.isabs(name) and Path(name).parent == tmp_path
    assert Path(name).name.startswith(".out.json.") and name.endswith(".tmp")
    assert stat.S_IMODE(os.lstat(name).st_mode) == 0o600
    taken = iter([b"\x00" * 6, b"\x00" * 6, b"\x01" * 6])  # the first name exists already: the next is tried
    monkeypatch.setattr(os, "urandom", lambda n: next(taken))
    fd, first = output.make_temporary(tmp_path, "t.", "")
    os.close(fd)
    fd, second = output.make_temporary(tmp_path, "t.", "")
    os.close(fd)
    assert (Path(first).name, Path(second).name) == ("t.000000000000", "t.010101010101")
