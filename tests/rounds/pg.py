"""A throw-away PostgreSQL server for the tests and benchmarks: initdb into a temporary folder,
listening only on a Unix socket in that folder, stopped and removed at the end.

initdb refuses to run as root, so as root the server runs as the ``postgres`` user (the
Debian package's) through ``runuser``; as anyone else it runs as that user.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def bindir() -> Path | None:
    """The folder of initdb and pg_ctl: PostgreSQL 15's if installed, else the newest, else the PATH's."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    preferred = [p for p in found if Path(p).parts[-3] == "15"]
    for path in [*preferred, *reversed(found), shutil.which("initdb")]:
        if path and os.access(path, os.X_OK):
            return Path(path).parent
    return None


def _as_server_user(args: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return args
    return ["runuser", "-u", "postgres", "--", *args]


@contextmanager
def server() -> Iterator[str]:
    """Start a server; yields the address of its ``postgres`` database (as user ``postgres``)."""
    bin_ = bindir()
    if bin_ is None:
        raise RuntimeError("PostgreSQL is not installed (no initdb)")
    folder = Path(tempfile.mkdtemp(prefix="memsolve-pg-"))  # short: a socket path has ~100 bytes
    data = folder / "data"
    try:
        if os.geteuid() == 0:
            shutil.chown(folder, "postgres", "postgres")
        subprocess.run(_as_server_user([str(bin_ / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust",
                                        "-E", "UTF8", "--no-sync", "--locale=C"]),
                       check=True, capture_output=True, text=True)
        # test settings: no fsync (the server itself is never killed), a socket in the folder, no TCP
        options = (f"-k {folder} -c listen_addresses='' -c fsync=off -c synchronous_commit=off "
                   "-c full_page_writes=off -c max_connections=100")
        subprocess.run(_as_server_user([str(bin_ / "pg_ctl"), "-D", str(data), "-o", options, "-l",
                                        str(folder / "log"), "-w", "-t", "60", "start"]),
                       check=True, capture_output=True, text=True)
        try:
            yield f"postgresql://postgres@/postgres?host={folder}"
        finally:
            subprocess.run(_as_server_user([str(bin_ / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w",
                                            "stop"]), capture_output=True, text=True)
    except subprocess.CalledProcessError as exc:
        raise RuntimeError(f"starting PostgreSQL failed: {exc.stderr or exc.stdout}") from None
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def fresh_schema(address: str) -> str:
    """A new, empty schema on the server; the address whose tables live there."""
    import psycopg

    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(address, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}")
    return f"{address}&options=-csearch_path%3D{name}"


def restart(address: str) -> None:
    """Restart the server of ``address`` (one ``server()`` started), as an operator would: every
    client's connection is closed by the server; the options of its start are kept."""
    from urllib.parse import parse_qs, urlsplit

    folder = Path(parse_qs(urlsplit(address).query)["host"][0])
    subprocess.run(_as_server_user([str(bindir() / "pg_ctl"), "-D", str(folder / "data"), "-l", str(folder / "log"),
                                    "-m", "fast", "-w", "-t", "60", "restart"]),
                   check=True, capture_output=True, text=True)
