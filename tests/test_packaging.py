"""The package a pipeline installs: ``python -m build`` makes an sdist and a wheel that pass
``twine check``, with complete metadata, and the wheel installs into a fresh virtual environment,
with and without a C compiler (the compiled kernel is optional), and runs.

Offline and quick: the build uses the build backend already installed (``--no-isolation``), the
wheel is installed with ``--no-index --no-deps``, and the fresh environment reaches memsolve's
dependencies through a path entry to this environment's site-packages (a ``.pth`` line adds the
folder only, not this environment's own ``memsolve`` editable hook).
"""

from __future__ import annotations

import email
import importlib.util
import json
import shutil
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import memsolve

from .ci.helpers import ISOLATED, deps_venv, run, source_copy
from .conftest import ROOT, needs


def _run(*args: object, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    return run(*args, cwd=cwd, env=env).stdout


pytestmark = needs(all(importlib.util.find_spec(m) for m in ("build", "twine")) and shutil.which("git") is not None,
                   "the build and twine packages and git (the test extra)")


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """sdist, the wheel built from it (with the C compiler), and a wheel built with no compiler."""
    root = tmp_path_factory.mktemp("pkg")
    source = source_copy(root / "src")
    out = root / "dist"
    env = {**ISOLATED, "PYTHONDONTWRITEBYTECODE": "1"}
    _run(sys.executable, "-m", "build", "--no-isolation", "--outdir", out, source, env=env)
    no_cc = root / "dist-no-cc"
    # a compiler that does not exist: the optional extension fails, the build does not
    _run(sys.executable, "-m", "build", "--no-isolation", "--wheel", "--outdir", no_cc, source,
         env={**env, "CC": str(root / "no-such-cc")})
    (sdist,) = out.glob("*.tar.gz")
    (wheel,) = out.glob("*.whl")
    (plain,) = no_cc.glob("*.whl")
    return {"sdist": sdist, "wheel": wheel, "no-cc": plain}


def test_sdist_and_wheel_pass_twine_check(dists: dict[str, Path]) -> None:
    out = _run(sys.executable, "-m", "twine", "check", "--strict", dists["sdist"], dists["wheel"])
    assert out.count("PASSED") == 2


def test_metadata_is_complete_and_the_version_has_one_source(dists: dict[str, Path]) -> None:
    with zipfile.ZipFile(dists["wheel"]) as wheel:
        names = wheel.namelist()
        meta = email.message_from_bytes(wheel.read(f"memsolve-{memsolve.__version__}.dist-info/METADATA"))
    assert meta["Version"] == memsolve.__version__  # pyproject reads it from memsolve.__version__
    assert "version =" not in (ROOT / "pyproject.toml").read_text().split("[project.optional-dependencies]")[0]
    for doc in ("docs/ci/github-actions.yml", "docs/ci/pre-commit-config.yaml"):  # the release the docs pin
        assert f"v{memsolve.__version__}" in (ROOT / doc).read_text(), doc
    assert meta["License-Expression"] == "MIT"
    assert f"memsolve-{memsolve.__version__}.dist-info/licenses/LICENSE" in names
    assert meta["Requires-Python"] == ">=3.10"
    urls = dict(u.split(", ", 1) for u in meta.get_all("Project-URL"))
    assert set(urls) >= {"Homepage", "Source", "Issues", "Documentation"}
    classifiers = meta.get_all("Classifier")
    assert "Programming Language :: Python :: 3.11" in classifiers and len(classifiers) >= 8
    assert meta["Summary"] and meta["Description-Content-Type"] == "text/markdown"
    assert "memsolve/schemas/policy-test.schema.json" in names and "memsolve/py.typed" not in names
    assert any(n.startswith("memsolve/solver/_kernel") and n.endswith((".so", ".pyd")) for n in names)
    assert any(n.startswith("memsolve/_scan") and n.endswith((".so", ".pyd")) for n in names)
    with tarfile.open(dists["sdist"]) as sdist:
        members = {m.name.split("/", 1)[1] for m in sdist.getmembers() if "/" in m.name}
    assert {"LICENSE", "setup.py", "pyproject.toml", "src/memsolve/solver/_kernel.c", "src/memsolve/_scan.c"} <= members


def _fresh_venv(where: Path, wheel: Path) -> Path:
    """A new environment holding only ``wheel``; the dependencies come from this environment."""
    python = deps_venv(where)
    _run(sys.executable, "-m", "pip", "--python", python, "install", "--no-index", "--no-deps", "--quiet", wheel)
    return python


@pytest.mark.parametrize(("kind", "kernel"), [("wheel", "compiled kernel"),
                                              ("no-cc", "numpy kernel: not compiled at install")])
def test_the_wheel_installs_in_a_fresh_venv_and_runs(dists: dict[str, Path], tmp_path: Path, kind: str,
                                                     kernel: str) -> None:
    python = _fresh_venv(tmp_path / "venv", dists[kind])
    where = _run(python, "-c", "import memsolve; print(memsolve.__file__)").strip()
    assert Path(where).is_relative_to(tmp_path / "venv")  # the wheel's memsolve, not this checkout's
    script = tmp_path / "venv" / "bin" / "memsolve"
    assert _run(script, "--version").strip() == f"memsolve {memsolve.__version__} ({kernel})"
    result = json.loads(_run(script, "--policy", "policies/team-a.yaml", "--format", "json", cwd=ROOT))
    assert result["schema"] == "memsolve/result/v1" and result["solver"]["status"] == "optimal"
    assert result["selected"]
    # the CI half, from the installed package: check passes (a warning only), policy tests pass
    _run(script, "check", "policies/team-a.yaml", "--format", "junit", cwd=ROOT)
    _run(script, "test", "policies/tests/", cwd=ROOT)
