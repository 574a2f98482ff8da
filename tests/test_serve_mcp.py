"""``memsolve mcp`` end to end: the server as a subprocess, the ``mcp`` SDK's own client over stdio."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memsolve import adapters

from .conftest import ROOT, needs

try:
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client
except ImportError:  # the mcp extra is not installed
    ClientSession = None

pytestmark = needs(ClientSession is not None, "the mcp package (pip install 'memsolve[mcp]')")
POLICY = "policies/imported-memories.yaml"
NOW = "2026-11-28T12:00:00Z"


def _records(tmp_path: Path) -> Path:
    path = tmp_path / "memories.jsonl"
    path.write_text(adapters.import_file("langgraph", "examples/imports/langgraph.json").jsonl())
    return path


def _session(tmp_path: Path, *args: str, calls: list[tuple[str, dict[str, Any]]]) -> tuple[list, list, str]:
    """Start ``memsolve mcp ARGS``, list its tools, make ``calls`` in order; the tools, the call
    results and what the server wrote to stderr."""

    async def talk() -> tuple[list, list]:
        params = StdioServerParameters(command=sys.executable, args=["-m", "memsolve", "mcp", *args], cwd=str(ROOT))
        with (tmp_path / "server.err").open("w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                tools = (await session.list_tools()).tools
                results = [await session.call_tool(name, arguments) for name, arguments in calls]
        return tools, results

    tools, results = anyio.run(talk)
    return tools, results, (tmp_path / "server.err").read_text()


def test_select_context_and_explain_over_stdio_with_state(tmp_path: Path) -> None:
    state = tmp_path / "state.db"
    query = {"query": "why did the deploy fail", "now": NOW}
    tools, results, errors = _session(
        tmp_path, "--policy", POLICY, "--records", str(_records(tmp_path)), "--state", str(state), "--agent", "ops",
        calls=[("select_context", query), ("select_context", {**query, "budget": 13}),
               ("explain", {"id": "acme/archive/oncall"}), ("explain", {"id": "globex/memories/deploy-failure"}),
               ("explain", {"id": "no-such-memory"}), ("select_context", {"query": "x", "now": "yesterday"}),
               ("select_context", {**query, "budget": 61})])
    assert {tool.name for tool in tools} == {"select_context", "explain"}
    schema = next(tool for tool in tools if tool.name == "select_context").input_schema
    assert set(schema["properties"]) == {"query", "budget", "session", "now"} and schema["required"] == ["query"]

    first, second, oncall, foreign, missing, bad_now, too_much = results
    assert not first.is_error and not second.is_error
    turn = first.structured_content
    assert turn["round"] == 1 and turn["tokens_used"] == 25 and turn["budget"] == 60
    assert [(s["id"], s["level"], s["tokens"]) for s in turn["selected"]] == [
        ("acme/memories/deploy-failure", "raw", 13), ("acme/memories/deploy-fix", "raw", 12)]
    assert turn["selected"][0]["text"].startswith("The Tuesday deploy failed")
    assert set(turn["price"]) == {"lambda", "per_token", "queue_before", "queue_after"}
    assert turn["other_tenants"] == 1
    assert json.loads(first.content[0].text) == turn  # the text the model reads says the same
    # the second call is round 2 of the same agent: the budget of this turn, the queue carried over
    assert second.structured_content["round"] == 2 and second.structured_content["tokens_used"] <= 13
    assert second.structured_content["price"]["queue_before"] == turn["price"]["queue_after"]
    # the prompt order (DESIGN §15): by id on the first turn; then what stayed, in the order it had
    assert turn["prompt_order"] == sorted(s["id"] for s in turn["selected"])
    order = second.structured_content["prompt_order"]
    assert sorted(order) == sorted(s["id"] for s in second.structured_content["selected"])
    stayed = [i for i in turn["prompt_order"] if i in order]
    assert order[:len(stayed)] == stayed

    assert not oncall.is_error
    explained = oncall.structured_content
    assert explained["outcome"] == "excluded" and explained["last_turn"]["rule"] == "latest-key"
    # another tenant's record is answered exactly as one that does not exist (DESIGN §9)
    assert foreign.is_error and missing.is_error
    assert (foreign.content[0].text.replace("globex/memories/deploy-failure", "ID")
            == missing.content[0].text.replace("no-such-memory", "ID"))
    assert "Globex" not in foreign.content[0].text and "TLS" not in json.dumps(turn)
    assert bad_now.is_error and "yesterday" in bad_now.content[0].text and "\n" not in bad_now.content[0].text
    assert too_much.is_error and "more than the policy's 60 tokens" in too_much.content[0].text
    assert "Traceback" not in errors

    shown = subprocess.run([sys.executable, "-m", "memsolve", "state", "show", "--state", str(state), "--agent", "ops",
                            "--policy", POLICY, "--format", "json"], capture_output=True, text=True, cwd=ROOT)
    (agent,) = json.loads(shown.stdout)["agents"]
    # each select_context was one round (the refused ones none), explain none
    assert [row["round"] for row in agent["history"]] == [1, 2]


def test_an_import_source_and_explain_before_any_selection(tmp_path: Path) -> None:
    _, results, _ = _session(tmp_path, "--policy", POLICY, "--records", "examples/imports/langgraph.json",
                             "--from", "langgraph",
                             calls=[("explain", {"id": "acme/memories/deploy-fix"}),
                                    ("select_context", {"query": "who is on call", "now": NOW})])
    early, turn = results
    assert early.is_error and "call select_context first" in early.content[0].text
    assert [s["id"] for s in turn.structured_content["selected"]] == ["acme/memories/oncall"]
    assert turn.structured_content["round"] == 1  # without state every turn is a first round


@pytest.mark.parametrize(("args", "message"), [
    (["--records", "-"], "--records - is standard input, which carries the protocol here; name a file"),
    (["--records", "examples/imports/langgraph.json", "--agent", "a"], "--state and --agent go together"),
    (["--records", "missing.jsonl"], "missing.jsonl: file not found"),
    (["--policy", "-", "--records", "examples/imports/langgraph.json"],
     "--policy - is standard input, which carries the protocol here; name a file"),
    (["--records", "examples/imports/langgraph.json", "--from", "langgraph", "--state", "/nonexistent/dir/s.db",
      "--agent", "a"], "/nonexistent/dir/s.db: no directory /nonexistent/dir to keep the state file in"),
    (["--records", "examples/imports/langgraph.json", "--from", "langgraph",
      "--state", "examples/imports/langgraph.json", "--agent", "a"],
     "examples/imports/langgraph.json: --state and --records name the same file; memsolve never "
     "writes over its own input or one output over another, even with --force"),
    (["--records", "examples/imports/langgraph.json", "--from", "langgraph",
      "--state", "policies/imported-memories.yaml", "--agent", "a"],
     "policies/imported-memories.yaml: --state and --policy name the same file; memsolve never "
     "writes over its own input or one output over another, even with --force"),
    (["--records", "examples/imports/langgraph.json", "--from", "langgraph", "--state", "README.md", "--agent", "a"],
     "README.md: not a memsolve state file or corrupt (file is not a database); left untouched"),
])
def test_bad_command_lines_are_one_line_before_the_server_starts(args: list[str], message: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "memsolve", "mcp", "--policy", POLICY, *args], capture_output=True,
                          text=True, cwd=ROOT, stdin=subprocess.DEVNULL, timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == (f"error: {message}\n" if ":" in message.split()[0] else f"error: <input>: {message}\n")


def test_from_an_export_leaves_out_other_tenants_bad_items_and_fails_on_its_own(tmp_path: Path) -> None:
    """DESIGN §9: another tenant's unmappable item neither stops this tenant's server nor shows its
    values; the policy tenant's own unmappable item is the error it would be for `memsolve import`."""
    good = {"id": "m1", "memory": "the deploy failed on a TLS check", "user_id": "acme",
            "created_at": "2026-11-27T10:00:00Z"}
    theirs = {"id": "m2", "memory": "globex secret", "user_id": "globex", "created_at": "secret-globex-time"}
    unknown = {"id": "m3", "memory": "no owner", "created_at": "2026-11-27T10:00:00Z", "score": "high"}
    export = tmp_path / "mem0.json"
    export.write_text(json.dumps([good, theirs, unknown]))
    _, (turn,), errors = _session(tmp_path, "--policy", POLICY, "--records", str(export), "--from", "mem0",
                                  calls=[("select_context", {"query": "deploy", "now": NOW})])
    assert [s["id"] for s in turn.structured_content["selected"]] == ["m1"]
    assert errors == "--from mem0: left out 2 unmappable items of other or unknown tenants\n"
    export.write_text(json.dumps([good, theirs, {**good, "id": "m4", "created_at": "yesterday"}]))
    proc = subprocess.run([sys.executable, "-m", "memsolve", "mcp", "--policy", POLICY, "--records", str(export),
                           "--from", "mem0"], capture_output=True, text=True, cwd=ROOT, stdin=subprocess.DEVNULL,
                          timeout=60)
    assert proc.returncode == 2 and "globex" not in proc.stderr
    assert proc.stderr.startswith(f"error: {export}:1:") and "[2].created_at: `yesterday`" in proc.stderr


def test_the_server_collects_cycles_while_it_serves(tmp_path: Path, cli, monkeypatch: pytest.MonkeyPatch) -> None:
    """One-shot commands run with the cyclic collector off; a server runs for hours, so it collects."""
    import gc

    from memsolve import serve_mcp

    seen: list[bool] = []

    class Recording:
        def run(self, transport: str) -> None:
            seen.append(gc.isenabled())

    monkeypatch.setattr(serve_mcp, "build_server", lambda selector: Recording())
    result = cli("mcp", "--policy", POLICY, "--records", _records(tmp_path))
    assert result.exit_code == 0, result.stderr
    assert seen == [True]
