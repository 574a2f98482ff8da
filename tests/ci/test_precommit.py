"""The pre-commit hooks (.pre-commit-hooks.yaml), run for real by pre-commit against this
repository from a temporary repository of policies: green as committed, red with the finding at
its line once a rule changes.

pre-commit installs memsolve from the repository into an environment of its own, as for any
user. Offline and quick: pip runs without an index and without build isolation, and reaches
memsolve's dependencies (and the build backend) through PYTHONPATH; one environment serves every
run (the same repository and revision).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import sysconfig
from pathlib import Path

import pytest
import yaml

from ..conftest import ROOT, needs
from .helpers import ISOLATED, git_commit, loosen_max_age, run, source_copy, team_repo

pytestmark = needs(importlib.util.find_spec("pre_commit") is not None and shutil.which("git") is not None,
                   "pre-commit and git (the test extra)")


@pytest.fixture(scope="module")
def hooks(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """This repository as committed (its working tree, in a repository of its own), the pre-commit
    store and the environment pre-commit runs in."""
    root = tmp_path_factory.mktemp("precommit")
    repo = source_copy(root / "memsolve", commit=True)
    deps = os.pathsep.join(sorted({sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}))
    env = {**ISOLATED, "PRE_COMMIT_HOME": str(root / "store"), "PYTHONPATH": deps, "PIP_NO_INDEX": "1",
           # pip reads the --no-build-isolation switch from the environment inverted: 0 turns isolation off
           "PIP_NO_BUILD_ISOLATION": "0", "PRE_COMMIT_COLOR": "never",
           # no compiler: the install takes the numpy kernel (optional), seconds faster
           "CC": str(root / "no-such-cc")}
    return {"repo": repo, "env": env, "root": root}


def _pre_commit(hooks: dict, cwd: Path, *args: str, ok: bool | None = None):
    proc = run(sys.executable, "-m", "pre_commit", *args, cwd=cwd, env=hooks["env"], ok=False)
    if ok is not None:
        assert (proc.returncode == 0) == ok, proc.stdout[-4000:] + proc.stderr[-2000:]
    return proc


def test_the_hooks_file_names_the_three_hooks() -> None:
    hooks = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert set(hooks) == {"memsolve-check", "memsolve-test", "memsolve-audit"}
    assert all(h["language"] == "python" and h["entry"].startswith("memsolve ") for h in hooks.values())


def test_try_repo_green_then_red_at_the_changed_rule(hooks: dict, tmp_path: Path) -> None:
    team = team_repo(tmp_path / "team")
    relative = os.path.relpath(hooks["repo"], team)
    # try-repo installs into a store of its own each time: one hook tried this way, the rest below
    tried = _pre_commit(hooks, team, "try-repo", relative, "memsolve-test", "--all-files", ok=True).stdout
    assert "memsolve test...." in tried and "Passed" in tried
    # every hook, the audit with its policy and baseline: the configuration docs/ci gives, pointed
    # at this repository (one environment for the green and the red run)
    config = yaml.safe_load((ROOT / "docs/ci/pre-commit-config.yaml").read_text())
    (entry,) = config["repos"]
    entry["repo"] = relative
    entry["rev"] = run("git", "rev-parse", "HEAD", cwd=hooks["repo"]).stdout.strip()
    (team / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    git_commit(team, "pre-commit")
    green = _pre_commit(hooks, team, "run", "--all-files", ok=True).stdout
    assert green.count("Passed") == 3, green

    line = loosen_max_age(team)
    red = _pre_commit(hooks, team, "run", "--all-files", ok=False).stdout
    assert "memsolve audit" in red and "Failed" in red
    assert f"policies/team-a.yaml:{line}:5" in red  # the finding at the changed rule's line
    assert "a-incident-2025" in red
    assert "memsolve check....." in red and red.count("Passed") == 1  # still a valid policy (its tests fail too)
