"""``memsolve import``: JSON Lines on stdout, one summary line on stderr, one-line errors; and the
import-then-solve pipe through ``--records -`` in real processes."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from memsolve import adapters
from memsolve.cli import main

from ..conftest import DATA, ROOT

MEM0 = DATA / "adapters" / "mem0_get_all.json"


def test_the_records_are_the_librarys_and_the_summary_goes_to_stderr(cli) -> None:
    run = cli("import", "mem0", MEM0)
    assert run.exit_code == 0
    assert run.stdout == adapters.import_file("mem0", str(MEM0)).jsonl()
    assert run.stderr == f"imported 3 of 3 mem0 items from {MEM0}\n"


def test_options_reach_the_mapping(cli) -> None:
    run = cli("import", "graphiti", DATA / "adapters" / "graphiti.json", "--omit", "fact_embedding", "--tenant",
              "acme", "--store", "graph", "--ttl", "90d")
    records = [json.loads(line) for line in run.stdout.splitlines()]
    assert {(r["tenant"], r["store"], r["metadata"]["group_id"]) for r in records} == {("acme", "graph", "acme")}
    assert [r.get("ttl") for r in records] == ["27475200s", "90d", "90d"]  # the edge's own interval wins
    assert all("fact_embedding" not in r.get("metadata", {}) for r in records)
    assert "omitted fields `fact_embedding`" in run.stderr


def test_standard_input_and_an_output_file(tmp_path) -> None:
    out = tmp_path / "records.jsonl"
    runner = CliRunner()
    text = (DATA / "adapters" / "langgraph.jsonl").read_text()
    run = runner.invoke(main, ["import", "langgraph", "-", "--out", str(out)], input=text)
    assert run.exit_code == 0, run.stderr
    assert run.stdout == "" and run.stderr == "imported 3 of 3 langgraph items from standard input\n"
    assert out.read_text() == adapters.import_file("langgraph", str(DATA / "adapters" / "langgraph.jsonl")).jsonl()
    again = runner.invoke(main, ["import", "langgraph", "-", "--out", str(out)], input=text)
    assert again.exit_code == 2 and "exists" in again.stderr  # never overwritten silently
    empty = runner.invoke(main, ["import", "mem0", "-"], input="")
    assert (empty.exit_code, empty.stdout, empty.stderr) == (0, "", "imported 0 of 0 mem0 items from standard input\n")


def test_an_unmappable_item_is_one_line_exit_2(cli, tmp_path) -> None:
    path = tmp_path / "export.jsonl"
    bad = '{"id": "m2", "memory": "secret words", "created_at": "yesterday"}'
    path.write_text('{"id": "m1", "memory": "ok", "created_at": "2026-11-01T00:00:00Z"}\n' + bad + "\n")
    run = cli("import", "mem0", path)
    assert run.exit_code == 2 and run.stdout == ""
    column = bad.index('"yesterday"') + 1
    assert run.stderr == f"error: {path}:2:{column}: [1].created_at: `yesterday` is not an ISO 8601 time\n"
    skipped = cli("import", "mem0", path, "--skip-unmappable")
    assert skipped.exit_code == 0 and len(skipped.stdout.splitlines()) == 1
    assert skipped.stderr.startswith("imported 1 of 2 mem0 items") and "at [1]" in skipped.stderr
    assert cli("import", "mem0", tmp_path / "missing.json").stderr.endswith("missing.json: file not found\n")
    assert cli("import", "zep", path).exit_code == 2


def test_import_then_solve_from_standard_input() -> None:
    """DESIGN §12's pipe, as a user types it (two processes)."""
    imported = subprocess.run([sys.executable, "-m", "memsolve", "import", "langgraph",
                               "examples/imports/langgraph.json"], capture_output=True, text=True, cwd=ROOT,
                              check=True)
    solved = subprocess.run([sys.executable, "-m", "memsolve", "--policy", "policies/imported-memories.yaml",
                             "--records", "-", "--query", "why did the deploy fail", "--now", "2026-11-28T12:00:00Z",
                             "--format", "json"], input=imported.stdout, capture_output=True, text=True, cwd=ROOT)
    assert solved.returncode == 0, solved.stderr
    result = json.loads(solved.stdout)
    assert [s["id"] for s in result["selected"]] == ["acme/memories/deploy-failure", "acme/memories/deploy-fix"]
    assert {e["id"]: e["rule"] for e in result["excluded"]}["acme/archive/oncall"] == "latest-key"
    assert result["other_tenants"] == 1 and "globex" not in solved.stdout
    assert result["records"]["count"] == 6


def test_another_tenants_item_is_refused_not_imported_under_tenant(cli, tmp_path) -> None:
    """--tenant names whose memories these are; bob's memory is never written as alice's."""
    path = tmp_path / "two.json"
    path.write_text(json.dumps({"results": [
        {"id": "m1", "memory": "alice likes tea", "user_id": "alice", "created_at": "2024-01-01T00:00:00Z"},
        {"id": "m2", "memory": "bob's hint is fish", "user_id": "bob", "agent_id": "a", "created_at": "2024-01-01"}]}))
    run = cli("import", "mem0", path, "--tenant", "alice")
    assert run.exit_code == 2 and run.stdout == "" and "bob" not in run.stderr
    assert run.stderr.startswith(f"error: {path}:1:") and "results[1].user_id: the item's tenant" in run.stderr
    skipped = cli("import", "mem0", path, "--tenant", "alice", "--store", "semantic", "--skip-unmappable")
    records = [json.loads(line) for line in skipped.stdout.splitlines()]
    assert [(r["id"], r["tenant"], r["metadata"]["user_id"]) for r in records] == [("m1", "alice", "alice")]
    assert "1 skipped (unmappable, at [1]), 1 of them another tenant's" in skipped.stderr
    assert "bob" not in skipped.stderr
    chosen = cli("import", "mem0", path, "--tenant", "alice", "--tenant-from", "user_id", "--skip-unmappable")
    assert [json.loads(line)["id"] for line in chosen.stdout.splitlines()] == ["m1"]


def test_store_replaced_by_an_option_stays_in_metadata_and_is_counted(cli) -> None:
    run = cli("import", "mem0", MEM0, "--store", "semantic")
    records = [json.loads(line) for line in run.stdout.splitlines()]
    assert [r.get("metadata", {}).get("agent_id") for r in records] == [None, "travel-agent", None]
    assert {r["store"] for r in records} == {"semantic"}
    assert "1 source stores replaced by --store (kept in metadata)" in run.stderr


@pytest.mark.parametrize("ttl", ["banana", "-5m"])
def test_a_bad_ttl_is_one_line_before_anything_is_read(cli, ttl) -> None:
    run = cli("import", "mem0", MEM0, f"--ttl={ttl}")
    assert run.exit_code == 2 and run.stdout == ""
    assert run.stderr.startswith("error: ") and "--ttl" in run.stderr and len(run.stderr.splitlines()) == 1


def test_a_one_record_stream_is_json_lines_not_a_json_document() -> None:
    """One imported memory is one JSON Lines line; as `--records -` it is one record, not a mapping
    where a list was expected. The same holds for a one-item export on standard input."""
    runner = CliRunner()
    item = '{"namespace": ["acme", "memories"], "key": "k", "value": {"text": "the deploy failed"}, ' \
           '"updated_at": "2026-11-27T10:00:00Z"}\n'
    imported = runner.invoke(main, ["import", "langgraph", "-"], input=item)
    assert imported.exit_code == 0, imported.stderr
    assert imported.stderr == "imported 1 of 1 langgraph items from standard input\n"
    solved = runner.invoke(main, ["--policy", "policies/imported-memories.yaml", "--records", "-", "--query",
                                  "deploy", "--now", "2026-11-28T12:00:00Z", "--format", "json"],
                           input=imported.stdout)
    assert solved.exit_code == 0, solved.stderr
    assert [s["id"] for s in json.loads(solved.stdout)["selected"]] == ["acme/memories/k"]
