"""A policy over a fleet of agents on Dask: one result line per agent, resumable, with a
fleet-wide audit.

The agents (a folder of records files, or a JSON Lines list of agent, tenant and records file)
become a ``dask.bag`` of partitions; ``map_partitions(solve_partition)`` runs the ordinary
library call for each agent of a partition (no scheduler code inside it), on a LocalCluster
or on an existing cluster by address. The client writes each partition's lines to ``--out``
as the partition finishes, so a batch that stops (killed, a lost scheduler) leaves every
finished agent in the file and a second run skips them; at the end the file is rewritten in
agent order, so the same inputs give the same bytes whatever order the workers finished in.
A worker lost mid-batch is Dask's to handle: its partitions run again elsewhere, and a
partition's lines are written once, when its result arrives.

An agent whose records cannot be read or solved is an error line on stderr (``agent `a`:
file:line: message``) and is not written to ``--out``: the batch goes on, and a rerun tries
that agent again.
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError, Location, MemsolveError
from ..output import write_text
from ..source import format_of, load_document

RECORD_SUFFIXES = (".json", ".jsonl", ".yaml", ".yml")
NO_RULE = "(budget and price)"  # an audit change no rule decided: the allocation moved


@dataclass(frozen=True)
class Agent:
    """One agent of the fleet: its name, its tenant (None: the policy's) and its records file."""

    agent: str
    tenant: str | None
    records: str


@dataclass(frozen=True)
class AgentOutcome:
    """What one agent's run gave: its result line (with an audit, the audit's outcome in it), or
    its error."""

    agent: str
    line: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class BatchSummary:
    """The fleet's totals: agents solved in this run, skipped (already in --out), failed; over
    every listed agent's line in --out (resumed ones too), exclusions per rule and, with an
    audit, changed outcomes per rule and the agents that changed."""

    agents: int
    solved: int
    skipped: int
    errors: tuple[str, ...]
    exclusions: dict[str, int]
    audited: bool = False
    changed_by_rule: dict[str, int] = field(default_factory=dict)
    changed_agents: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"agents": self.agents, "solved": self.solved, "skipped": self.skipped,
                                "errors": len(self.errors), "exclusions_by_rule": dict(sorted(self.exclusions.items()))}
        if self.audited:
            data["audit"] = {"changed_outcomes": sum(self.changed_by_rule.values()),
                             "changed_by_rule": dict(sorted(self.changed_by_rule.items())),
                             "changed_agents": list(self.changed_agents)}
        return data


# --- the fleet ------------------------------------------------------------------------------

def load_agents(source: str | Path) -> list[Agent]:
    """The agents a SOURCE names: a folder (each records file is one agent, named by its file
    name without suffix, of the policy's tenant) or a JSON Lines file of
    ``{"agent": ..., "tenant": ..., "records": ...}`` (records relative to that file)."""
    path = Path(source)
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and p.suffix in RECORD_SUFFIXES)
        if not files:
            raise InputError(f"no records files ({', '.join(RECORD_SUFFIXES)}) in the folder", Location(str(path)))
        agents = [Agent(p.stem, None, os.path.abspath(p)) for p in files]  # workers may run elsewhere
        names = Counter(a.agent for a in agents)
        twice = sorted(name for name, n in names.items() if n > 1)
        if twice:
            raise InputError(f"two records files name agent `{twice[0]}` (file names differ only in suffix)",
                             Location(str(path)))
        return agents
    doc, _ = load_document(path, fmt="jsonl" if format_of(path) == "jsonl" else format_of(path))
    if doc.format != "jsonl":
        raise InputError("the agents list must be JSON Lines (.jsonl) or a folder of records files",
                         Location(str(path)))
    agents: list[Agent] = []
    seen: set[str] = set()
    for i, item in enumerate(doc.data):
        if not isinstance(item, dict):
            raise doc.error((i,), "expected an object with `agent`, `tenant` and `records`")
        unknown = sorted(set(item) - {"agent", "tenant", "records"})
        if unknown:
            raise doc.error((i, unknown[0]), "unknown field; expected `agent`, `tenant`, `records`", key=True)
        name, tenant, records = item.get("agent"), item.get("tenant"), item.get("records")
        if type(name) is not str or not name:
            raise doc.error((i, "agent"), "expected the agent's name (a non-empty text)")
        if name in seen:
            raise doc.error((i, "agent"), f"agent `{name}` is listed twice")
        if tenant is not None and (type(tenant) is not str or not tenant):
            raise doc.error((i, "tenant"), "expected a tenant name or null")
        if type(records) is not str or not records:
            raise doc.error((i, "records"), "expected the path of the agent's records file")
        seen.add(name)
        agents.append(Agent(name, tenant, os.path.abspath(path.parent / records)))
    return agents


def read_results(out: str | Path) -> dict[str, tuple[int, dict[str, Any]]]:
    """The result lines already in ``out`` by agent: (line number, the parsed line). A last
    line cut short by a crash is not a result (that agent runs again); any other line that is
    not one is an input error."""
    path = Path(out)
    if not path.exists():
        return {}
    lines = path.read_text(encoding="utf-8").split("\n")
    done: dict[str, tuple[int, dict[str, Any]]] = {}
    for number, text in enumerate(lines, 1):
        if not text.strip():
            continue
        try:
            item = json.loads(text)
        except ValueError:
            if number == len(lines):  # no newline after it: the write was cut
                continue
            raise InputError("not a batch result line (expected a JSON object with `agent`)",
                             Location(str(path), number)) from None
        if not isinstance(item, dict) or type(item.get("agent")) is not str:
            raise InputError("not a batch result line (expected a JSON object with `agent`)",
                             Location(str(path), number))
        done[item["agent"]] = (number, item)
    return done


def resumable(out: str | Path, written: dict[str, tuple[int, dict[str, Any]]], agents: Sequence[Agent],
              policy: Any, baseline_dir: str | None) -> set[str]:
    """The agents whose lines in ``out`` this run would write again: made by the same policy
    (its sha256), from the same records file (its sha256) for the same tenant, and, with an
    audit, against the same baseline. A line made otherwise is refused: mixing two runs in one
    file would report results and audits no run produced. An agent whose records file the
    client cannot read (a path only the workers see) runs again; its new line replaces the old."""
    listed = {a.agent: a for a in agents}
    skip: set[str] = set()
    for name, (number, item) in written.items():
        agent = listed.get(name)
        same = _dig(item, "policy", "sha256") == policy.sha256
        if same and agent is not None:
            try:
                records = _sha256(agent.records)
            except OSError:
                continue
            tenant = agent.tenant if agent.tenant is not None else policy.tenant
            same = _dig(item, "records", "sha256") == records and item.get("tenant") == tenant
            if same and baseline_dir is not None:
                try:
                    baseline = _sha256(Path(baseline_dir) / f"{name}.json")
                except OSError:
                    baseline = None
                same = _dig(item, "audit", "baseline_sha256") == baseline
        if not same:
            audit = " or other baselines" if baseline_dir is not None else ""
            raise InputError(f"--out holds results of another policy (or other records{audit}) for agent `{name}`; "
                             "use a new --out", Location(str(out), number))
        if agent is not None:
            skip.add(name)
    return skip


def _dig(item: Any, *keys: str) -> Any:
    for key in keys:
        item = item.get(key) if isinstance(item, dict) else None
    return item


def _sha256(path: str | Path) -> str:
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# --- on the workers -------------------------------------------------------------------------

def solve_agent(policy: Any, agent: Agent, trace: str = "none", baseline_dir: str | None = None) -> AgentOutcome:
    """One agent: the ordinary library call (and an audit against its baseline). Errors of its
    own input are its outcome, not the batch's."""
    from .. import pipeline
    from ..ci import audit as auditing
    from ..context import Context
    from ..records import load_records

    try:
        records = load_records(agent.records)
        context = Context(tenant=agent.tenant) if agent.tenant is not None else None
        result = pipeline.run(policy, records, context, trace=trace).result
        changed: list[tuple[str, str | None, str, str]] = []
        baseline_sha256 = None
        if baseline_dir is not None:
            baseline_file = str(Path(baseline_dir) / f"{agent.agent}.json")
            stored = auditing.load_baseline(baseline_file)
            baseline_sha256 = _sha256(baseline_file)
            for finding in auditing.compare(policy, stored, result):
                if not finding.passed:
                    before, after = finding.data["before"], finding.data["after"]
                    rule = (after or {}).get("rule") or (before or {}).get("rule")
                    changed.append((finding.name, rule, _outcome(before), _outcome(after)))
    except MemsolveError as error:
        return AgentOutcome(agent.agent, error=error.render() if isinstance(error, InputError) else str(error))
    line = {"agent": agent.agent, "tenant": agent.tenant if agent.tenant is not None else policy.tenant,
            **json.loads(result.to_json())}
    if baseline_dir is not None:  # the agent's audit, so that a resumed batch's summary counts it too
        by_rule = Counter(rule or NO_RULE for _, rule, _, _ in changed)
        line["audit"] = {"baseline_sha256": baseline_sha256, "changed_outcomes": len(changed),
                         "changed_by_rule": dict(sorted(by_rule.items())),
                         "changed": [{"id": id_, "rule": rule, "before": before, "after": after}
                                     for id_, rule, before, after in changed]}
    return AgentOutcome(agent.agent, json.dumps(line, ensure_ascii=False, sort_keys=False))


def solve_partition(agents: Iterable[Agent], policy_text: str, policy_file: str, trace: str,
                    baseline_dir: str | None) -> list[AgentOutcome]:
    """One partition of the bag: the policy is read once, then every agent in turn."""
    from ..policies.load import policy_from_text

    policy = policy_from_text(policy_text, policy_file)
    return [solve_agent(policy, agent, trace, baseline_dir) for agent in agents]


def _outcome(value: Any) -> str:
    from ..result import describe_outcome

    return describe_outcome(value)


# --- on the client --------------------------------------------------------------------------

def run_batch(
    policy_file: str,
    agents: Sequence[Agent],
    out: str | Path,
    *,
    scheduler: str = "local",
    workers: int | None = None,
    partition_size: int = 100,
    trace: str = "none",
    baseline_dir: str | None = None,
    on_error: Callable[[str, str], None] | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> BatchSummary:
    """Run every agent not yet in ``out``; append each finished partition's lines; finally
    rewrite ``out`` in agent order. ``on_error(agent, message)`` is called for each failed
    agent, ``on_progress(done, total)`` after each partition (agents done of those to run)."""
    import dask.bag as db
    from distributed import Client, LocalCluster, as_completed

    from ..policies.load import load_policy

    policy = load_policy(policy_file)  # a bad policy stops the batch before any agent runs
    policy_text = Path(policy_file).read_bytes().decode("utf-8")
    if baseline_dir is not None:  # workers may run in another folder
        baseline_dir = os.path.abspath(baseline_dir)
    skip = resumable(out, read_results(out), agents, policy, baseline_dir)
    _cut_partial_line(out)
    try:  # an --out that cannot be written fails here, before a cluster starts
        open(out, "a", encoding="utf-8").close()
    except OSError as exc:
        raise InputError(f"cannot write the results: {exc.strerror or exc}", Location(str(out))) from None
    todo = [a for a in agents if a.agent not in skip]
    errors: list[str] = []
    if todo:
        cluster = None
        if scheduler == "local":
            cluster = LocalCluster(n_workers=workers or min(os.cpu_count() or 1, 8), threads_per_worker=1,
                                   processes=True, dashboard_address=":0")
            client = Client(cluster)
        else:
            try:  # waits distributed.comm.timeouts.connect (Dask's setting, 30 s by default)
                client = Client(scheduler)
            except (OSError, TimeoutError) as exc:
                raise InputError(f"cannot reach the Dask scheduler at {scheduler} ({_first_line(exc)})",
                                 Location("--scheduler")) from None
        try:
            npartitions = max(1, math.ceil(len(todo) / partition_size))
            bag = db.from_sequence(todo, npartitions=npartitions).map_partitions(
                solve_partition, policy_text, policy_file, trace, baseline_dir)
            futures = client.compute(bag.to_delayed())
            done = 0
            with open(out, "a", encoding="utf-8") as handle:
                for future in as_completed(futures):
                    outcomes: list[AgentOutcome] = future.result()
                    for outcome in outcomes:
                        if outcome.error is not None:
                            errors.append(outcome.agent)
                            if on_error is not None:
                                on_error(outcome.agent, outcome.error)
                            continue
                        handle.write(outcome.line + "\n")
                    handle.flush()
                    os.fsync(handle.fileno())
                    done += len(outcomes)
                    if on_progress is not None:
                        on_progress(done, len(todo))
        finally:
            client.close()
            if cluster is not None:
                cluster.close()
    _sort_lines(out)
    return _summary(out, agents, len(todo) - len(errors), len(skip), errors, baseline_dir is not None)


def _summary(out: str | Path, agents: Sequence[Agent], solved: int, skipped: int, errors: list[str],
             audited: bool) -> BatchSummary:
    """The totals over every listed agent's line in ``out``: those of this run and those it
    resumed from (each line carries its exclusions and its audit)."""
    listed = {a.agent for a in agents}
    exclusions: Counter[str] = Counter()
    changed_by_rule: Counter[str] = Counter()
    changed_agents: list[str] = []
    for name, (_, item) in sorted(read_results(out).items()):
        if name not in listed:
            continue
        exclusions.update(e["rule"] for e in item.get("excluded") or () if isinstance(e, dict) and e.get("rule"))
        audit = item.get("audit") if audited else None
        if isinstance(audit, dict) and audit.get("changed_outcomes"):
            changed_agents.append(name)
            changed_by_rule.update(audit.get("changed_by_rule") or {})
    return BatchSummary(len(agents), solved, skipped, tuple(sorted(errors)), dict(exclusions), audited,
                        dict(changed_by_rule), tuple(changed_agents))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _cut_partial_line(out: str | Path) -> None:
    """Drop a last line that a crash cut short (no newline after it), so appends start on a line."""
    path = Path(out)
    if not path.exists():
        return
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with open(path, "r+b") as handle:
            handle.truncate(data.rfind(b"\n") + 1)


def _sort_lines(out: str | Path) -> None:
    """Rewrite ``out`` in agent order (atomically); a line cut by a crash is dropped."""
    path = Path(out)
    if not path.exists():
        write_text(path, "", force=False)
        return
    lines = {}
    for text in path.read_text(encoding="utf-8").split("\n"):
        try:
            item = json.loads(text)
        except ValueError:
            continue
        lines[item["agent"]] = text
    write_text(path, "".join(lines[name] + "\n" for name in sorted(lines)), force=True)
