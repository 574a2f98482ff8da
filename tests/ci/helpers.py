"""What the CI tests share: an editable copy of a bundled policy."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..conftest import ROOT, write


def policy_copy(tmp_path: Path, edit: Callable[[str], str] = lambda s: s) -> Path:
    """policies/team-a.yaml, edited, written to ``tmp_path`` with its records path made absolute."""
    text = (ROOT / "policies/team-a.yaml").read_text()
    text = text.replace("records: ../examples/shared.json", f"records: {ROOT / 'examples/shared.json'}")
    return write(tmp_path, "team-a.yaml", edit(text))
