"""memsolve batch on a real Dask cluster (a LocalCluster of worker processes started here): one
line per agent equal to the library's own result, resume, per-agent errors, the fleet audit,
and a worker killed mid-batch."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

import memsolve
from memsolve.fleet.batch import load_agents, run_batch

from ..conftest import ROOT, needs

pytestmark = needs(importlib.util.find_spec("distributed") is not None, "Dask distributed (the dask extra)")

FLEET = ROOT / "tests/data/fleet"
POLICY = str(FLEET / "policy.yaml")


@pytest.fixture(scope="module")
def scheduler() -> Iterator[str]:
    """An existing cluster, as a user's would be: two worker processes; its scheduler's address."""
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster:
        yield cluster.scheduler_address


def expected_line(agent: str, tenant: str | None) -> dict:
    """What the library itself answers for one agent: its result JSON, its agent and tenant."""
    policy = memsolve.load_policy(POLICY)
    records = memsolve.load_records(FLEET / "records" / f"{agent}.json")
    result = memsolve.pipeline.run(policy, records, memsolve.Context(tenant=tenant) if tenant else None,
                                   trace="none").result
    return {"agent": agent, "tenant": tenant, **json.loads(result.to_json())}


def lines(path: Path) -> list[dict]:
    return [json.loads(text) for text in path.read_text().splitlines()]


def test_a_folder_on_a_local_cluster_gives_the_librarys_results(tmp_path: Path, cli) -> None:
    out = tmp_path / "results.jsonl"
    result = cli("batch", "--policy", POLICY, "--agents", FLEET / "records", "--out", out, "--workers", "1",
                 "--partition-size", "4")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("batch: 6 agents: 6 solved, 0 already in")
    assert lines(out) == [expected_line(f"agent-{n}", None) for n in range(1, 7)]


def test_a_jsonl_fleet_on_an_existing_scheduler(tmp_path: Path, cli, scheduler: str) -> None:
    out = tmp_path / "results.jsonl"
    result = cli("batch", "--policy", POLICY, "--agents", FLEET / "agents.jsonl", "--out", out,
                 "--scheduler", scheduler, "--partition-size", "2", "--format", "json")
    assert result.exit_code == 0, result.stderr
    tenants = {f"agent-{n}": "acme" if n <= 4 else "globex" for n in range(1, 7)}
    got = lines(out)
    assert got == [expected_line(agent, tenant) for agent, tenant in sorted(tenants.items())]
    # agent-5's records are all globex's: under tenant acme nothing of them would be described
    summary = json.loads(result.stdout)
    excluded = sum(len(line["excluded"]) for line in got)
    assert summary["solved"] == 6 and sum(summary["exclusions_by_rule"].values()) == excluded


def test_a_second_run_skips_the_agents_already_written(tmp_path: Path, cli, scheduler: str) -> None:
    full, partial = tmp_path / "full.jsonl", tmp_path / "partial.jsonl"
    args = ("batch", "--policy", POLICY, "--agents", FLEET / "agents.jsonl", "--scheduler", scheduler)
    assert cli(*args, "--out", full).exit_code == 0
    written = full.read_text().splitlines()
    # a batch that stopped: agents 4 and 2 written, in finishing order, then a line cut by the kill
    partial.write_text(written[3] + "\n" + written[1] + "\n" + written[5][:40])
    result = cli(*args, "--out", partial)
    assert result.exit_code == 0, result.stderr
    assert "4 solved, 2 already in" in result.stdout
    assert partial.read_bytes() == full.read_bytes()  # agent order, byte for byte
    again = cli(*args, "--out", partial)
    assert "0 solved, 6 already in" in again.stdout and partial.read_bytes() == full.read_bytes()


def test_an_agents_bad_input_is_its_error_and_the_batch_goes_on(tmp_path: Path, cli, scheduler: str) -> None:
    (tmp_path / "records").mkdir()
    for n in (1, 2):
        shutil.copy(FLEET / "records" / f"agent-{n}.json", tmp_path / "records")
    (tmp_path / "records" / "broken.json").write_text('{"now": 1000, "records": [{"id": "x",}]}')
    agents = tmp_path / "agents.jsonl"
    agents.write_text("\n".join(json.dumps(a) for a in [
        {"agent": "agent-1", "tenant": "acme", "records": "records/agent-1.json"},
        {"agent": "broken", "tenant": "acme", "records": "records/broken.json"},
        {"agent": "missing", "tenant": "acme", "records": "records/nothing-here.json"},
        {"agent": "agent-2", "tenant": "acme", "records": "records/agent-2.json"},
    ]) + "\n")
    out = tmp_path / "out.jsonl"
    result = cli("batch", "--policy", POLICY, "--agents", agents, "--out", out, "--scheduler", scheduler,
                 "--partition-size", "4")
    assert result.exit_code == 2
    errors = result.stderr.splitlines()
    assert len(errors) == 2 and all(e.startswith("error: agent `") for e in errors)
    assert any(e.startswith(f"error: agent `missing`: {tmp_path}/records/nothing-here.json: file not found")
               for e in errors)
    assert any(e.startswith(f"error: agent `broken`: {tmp_path}/records/broken.json:1:") for e in errors)
    assert [line["agent"] for line in lines(out)] == ["agent-1", "agent-2"]
    assert "2 solved, 0 already in" in result.stdout and "2 failed" in result.stdout
    (tmp_path / "records" / "broken.json").write_text((FLEET / "records/agent-3.json").read_text())
    retry = cli("batch", "--policy", POLICY, "--agents", agents, "--out", out, "--scheduler", scheduler)
    assert "1 solved, 2 already in" in retry.stdout and retry.exit_code == 2  # `missing` still is
    assert [line["agent"] for line in lines(out)] == ["agent-1", "agent-2", "broken"]


@pytest.mark.parametrize(("agents", "message"), [
    ('{"agent": "a", "tenant": "t"}\n', ":1:1: [0].records: expected the path of the agent's records file"),
    ('{"agent": "a", "records": "r.json"}\n{"agent": "a", "records": "r.json"}\n',
     ":2:11: [1].agent: agent `a` is listed twice"),
    ('{"agent": "a", "records": "r.json", "team": 1}\n', ":1:37: [0].team: unknown field"),
])
def test_a_bad_agents_list_is_one_line_before_any_work(tmp_path: Path, cli, agents: str, message: str) -> None:
    source = tmp_path / "agents.jsonl"
    source.write_text(agents)
    result = cli("batch", "--policy", POLICY, "--agents", source, "--out", tmp_path / "out.jsonl")
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"error: {source}") and message in result.stderr, result.stderr
    assert not (tmp_path / "out.jsonl").exists()


def test_a_fleet_audit_counts_changed_outcomes_per_rule(tmp_path: Path, cli, scheduler: str) -> None:
    baselines = tmp_path / "baselines"
    baselines.mkdir()
    for n in range(1, 7):
        tenant = "acme" if n <= 4 else "globex"
        written = cli("audit", "--policy", POLICY, "--records", FLEET / "records" / f"agent-{n}.json",
                      "--tenant", tenant, "--write-baseline", baselines / f"agent-{n}.json")
        assert written.exit_code == 0, written.stderr
    args = ("batch", "--agents", FLEET / "agents.jsonl", "--scheduler", scheduler, "--audit", baselines,
            "--format", "json")
    same = cli(*args, "--policy", POLICY, "--out", tmp_path / "same.jsonl")
    assert same.exit_code == 0 and json.loads(same.stdout)["audit"]["changed_outcomes"] == 0
    stricter = tmp_path / "stricter.yaml"
    stricter.write_text(Path(POLICY).read_text().replace("max_age: 720", "max_age: 400"))
    changed = cli(*args, "--policy", stricter, "--out", tmp_path / "changed.jsonl")
    assert changed.exit_code == 1, changed.stderr
    audit = json.loads(changed.stdout)["audit"]
    # the same count, agent by agent, as `memsolve audit` reports
    expected, agents_changed = 0, []
    for n in range(1, 7):
        one = cli("audit", "--policy", stricter, "--records", FLEET / "records" / f"agent-{n}.json", "--tenant",
                  "acme" if n <= 4 else "globex", "--baseline", baselines / f"agent-{n}.json", "--format", "json")
        found = [f for f in json.loads(one.stdout)["findings"] if f["suite"] == "audit" and not f["passed"]]
        expected += len(found)
        agents_changed += [f"agent-{n}"] if found else []
    assert expected > 0 and audit["changed_outcomes"] == expected
    assert audit["changed_agents"] == agents_changed and set(audit["changed_by_rule"]) <= {"max-age", "freshness",
                                                                                          "(budget and price)"}


def test_a_worker_killed_mid_batch_leaves_every_agent_exactly_once(tmp_path: Path) -> None:
    from distributed import Client, LocalCluster

    folder = tmp_path / "fleet"
    folder.mkdir()
    for i in range(36):  # 36 agents, 18 partitions of 2: most are still to run when the worker dies
        shutil.copy(FLEET / "records" / f"agent-{i % 6 + 1}.json", folder / f"a{i:02d}.json")
    agents = load_agents(folder)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster:
        with Client(cluster) as client:
            pids = list(client.run(os.getpid).values())
        killed: list[int] = []

        def kill_one(done: int, total: int) -> None:
            if not killed:
                os.kill(pids[0], signal.SIGKILL)
                killed.append(done)

        out = tmp_path / "out.jsonl"
        summary = run_batch(POLICY, agents, out, scheduler=cluster.scheduler_address, partition_size=2,
                            on_progress=kill_one)
    assert killed and killed[0] < 36
    assert summary.solved == 36 and summary.errors == ()
    names = [line["agent"] for line in lines(out)]
    assert names == [f"a{i:02d}" for i in range(36)]  # every agent exactly once
    for line in lines(out):
        n = int(line["agent"][1:]) % 6 + 1
        assert {**line, "agent": f"agent-{n}"} == expected_line(f"agent-{n}", None)


def test_an_out_that_cannot_be_written_is_one_line_before_any_work(tmp_path: Path, cli) -> None:
    out = tmp_path / "no-such-folder" / "out.jsonl"
    result = cli("batch", "--policy", POLICY, "--agents", FLEET / "agents.jsonl", "--out", out)
    assert result.exit_code == 2 and result.stderr == f"error: {out}: cannot write the results: No such file or " \
                                                      "directory\n"


def test_the_progress_bar_counts_the_agents(tmp_path: Path, cli, scheduler: str) -> None:
    result = cli("batch", "--policy", POLICY, "--agents", FLEET / "agents.jsonl", "--out", tmp_path / "out.jsonl",
                 "--scheduler", scheduler, "--partition-size", "3", "--progress")
    assert result.exit_code == 0, result.stderr
    assert "agents" in result.stderr and "6/6" in result.stderr
    quiet = cli("batch", "--policy", POLICY, "--agents", FLEET / "agents.jsonl", "--out", tmp_path / "q.jsonl",
                "--scheduler", scheduler, "--no-progress")
    assert quiet.exit_code == 0 and quiet.stderr == ""


# --- review fixes: a resumed batch is the same batch ------------------------------------------

def _stricter(tmp_path: Path) -> Path:
    stricter = tmp_path / "stricter.yaml"
    stricter.write_text(Path(POLICY).read_text().replace("max_age: 720", "max_age: 400"))
    return stricter


def _baselines(tmp_path: Path, cli) -> Path:
    baselines = tmp_path / "baselines"
    baselines.mkdir()
    for n in range(1, 7):
        written = cli("audit", "--policy", POLICY, "--records", FLEET / "records" / f"agent-{n}.json",
                      "--tenant", "acme" if n <= 4 else "globex", "--write-baseline", baselines / f"agent-{n}.json")
        assert written.exit_code == 0, written.stderr
    return baselines


def test_a_rerun_with_another_policy_or_records_on_the_same_out_is_refused(tmp_path: Path, cli,
                                                                            scheduler: str) -> None:
    folder = tmp_path / "records"
    shutil.copytree(FLEET / "records", folder)
    out = tmp_path / "out.jsonl"
    args = ("batch", "--agents", folder, "--scheduler", scheduler, "--out", out)
    assert cli(*args, "--policy", POLICY).exit_code == 0
    before = out.read_bytes()
    other = cli(*args, "--policy", _stricter(tmp_path))
    assert other.exit_code == 2 and other.stdout == "" and other.stderr.count("\n") == 1, other.stderr
    assert "another policy (or other records) for agent `agent-1`; use a new --out" in other.stderr
    assert out.read_bytes() == before
    (folder / "agent-3.json").write_text((FLEET / "records/agent-4.json").read_text())
    changed = cli(*args, "--policy", POLICY)
    assert changed.exit_code == 2 and "for agent `agent-3`; use a new --out" in changed.stderr, changed.stderr
    assert out.read_bytes() == before
    # a line cut by a crash is still not a result: the same policy resumes
    out.write_bytes(before[:-30])
    assert cli(*args, "--policy", POLICY).exit_code == 2  # agent-3's records still differ from its line
    (folder / "agent-3.json").write_text((FLEET / "records/agent-3.json").read_text())
    resumed = cli(*args, "--policy", POLICY)
    assert resumed.exit_code == 0 and "1 solved, 5 already in" in resumed.stdout and out.read_bytes() == before


def test_a_resumed_audit_counts_every_line_of_the_out(tmp_path: Path, cli, scheduler: str) -> None:
    baselines = _baselines(tmp_path, cli)
    out = tmp_path / "out.jsonl"
    args = ("batch", "--agents", FLEET / "agents.jsonl", "--scheduler", scheduler, "--audit", baselines,
            "--policy", _stricter(tmp_path), "--out", out, "--format", "json")
    first = cli(*args)
    assert first.exit_code == 1, first.stderr
    audit = json.loads(first.stdout)["audit"]
    assert audit["changed_outcomes"] > 0
    # each line carries its own audit outcome
    per_line = {line["agent"]: line["audit"] for line in lines(out)}
    assert sum(a["changed_outcomes"] for a in per_line.values()) == audit["changed_outcomes"]
    assert sorted(a for a, v in per_line.items() if v["changed_outcomes"]) == audit["changed_agents"]
    again = cli(*args)  # everything already in --out: the same audit, the same exit
    assert again.exit_code == 1 and json.loads(again.stdout)["audit"] == audit
    assert json.loads(again.stdout)["skipped"] == 6
    written = out.read_text().splitlines()
    out.write_text(written[0] + "\n" + written[4] + "\n")  # a batch that stopped after two agents
    resumed = cli(*args)
    assert resumed.exit_code == 1 and json.loads(resumed.stdout)["audit"] == audit
    assert json.loads(resumed.stdout)["exclusions_by_rule"] == json.loads(first.stdout)["exclusions_by_rule"]
    # lines written without an audit are not an audit's results
    plain = tmp_path / "plain.jsonl"
    assert cli(*args[:5], *args[7:9], "--out", plain).exit_code == 0
    refused = cli(*args[:9], "--out", plain)
    assert refused.exit_code == 2 and "use a new --out" in refused.stderr, refused.stderr


def test_a_relative_audit_folder_is_found_by_the_workers(tmp_path: Path, cli, scheduler: str,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    _baselines(tmp_path, cli)
    records = tmp_path / "records"
    shutil.copytree(FLEET / "records", records)
    monkeypatch.chdir(tmp_path)  # the workers started elsewhere (in the scheduler fixture's folder)
    result = cli("batch", "--policy", POLICY, "--agents", "records", "--scheduler", scheduler, "--audit", "baselines",
                 "--out", "out.jsonl", "--format", "json")
    assert result.stderr == "" and result.exit_code == 0  # every baseline found and unchanged
    summary = json.loads(result.stdout)
    assert summary["solved"] == 6 and summary["errors"] == 0 and summary["audit"]["changed_outcomes"] == 0


def test_an_unreachable_scheduler_is_one_line(tmp_path: Path, cli) -> None:
    import dask

    with dask.config.set({"distributed.comm.timeouts.connect": "2s"}):
        result = cli("batch", "--policy", POLICY, "--agents", FLEET / "agents.jsonl", "--out", tmp_path / "out.jsonl",
                     "--scheduler", "tcp://127.0.0.1:1")
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("error: --scheduler: cannot reach the Dask scheduler at tcp://127.0.0.1:1 (")


def test_a_batch_collects_cycles_while_it_runs(tmp_path: Path, cli, monkeypatch: pytest.MonkeyPatch) -> None:
    """One-shot commands run with the cyclic collector off; a fleet's run lasts, so it collects."""
    import gc

    from memsolve.fleet import batch as fleet_batch

    seen: list[bool] = []

    def recording(*args, **kwargs):
        seen.append(gc.isenabled())
        raise memsolve.InputError("stopped by the test")

    monkeypatch.setattr(fleet_batch, "run_batch", recording)
    result = cli("batch", "--policy", POLICY, "--agents", FLEET / "records", "--out", tmp_path / "r.jsonl")
    assert result.exit_code == 2 and "stopped by the test" in result.stderr
    assert seen == [True]
