"""examples/langgraph_agent.py runs as written: a LangGraph graph asking memsolve for its context each turn."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys

from .conftest import ROOT, needs


@needs(importlib.util.find_spec("langgraph") is not None, "langgraph (pip install 'memsolve[langgraph]')")
def test_the_langgraph_agent_recalls_from_its_store_every_turn() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "examples/langgraph_agent.py")], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    turns = re.split(r"^--- turn \d+: .*$", proc.stdout, flags=re.M)[1:]
    assert len(turns) == 3
    assert "Ticket 4411" in turns[0]  # the note that answers the first question
    assert "25 seats" in turns[1] and "40 seats" not in turns[1]
    assert "40 seats" in turns[2] and "25 seats" not in turns[2]  # what turn 2 stored, read back in turn 3
    assert "Globex" not in proc.stdout  # another tenant's namespace never reaches the prompt
    assert all(len(re.findall(r"^\[acme/", turn, flags=re.M)) <= 4 for turn in turns)  # max_records: 4
