"""The README's Python blocks and the example agent loop run as written, from the repository root."""

from __future__ import annotations

import re
import subprocess
import sys

from .conftest import ROOT


def test_every_python_block_in_the_readme_runs(capsys) -> None:
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S)
    assert blocks
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})  # noqa: S102 - our own documentation
    assert "m1" in capsys.readouterr().out  # the Selector example printed its selection


def test_the_example_agent_loop_runs_and_keeps_other_tenants_out() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "examples/agent_loop.py")], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.count("--- turn") == 3 and "round 3" in out
    assert "SAML response" in out  # the record the second turn added is in its context
    assert "Globex" not in out and "other" not in re.findall(r"\[(\w[\w-]*),", out)
