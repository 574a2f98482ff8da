"""audit: a policy against its baseline, and the isolation invariants every result must keep."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import memsolve
from memsolve.ci.audit import invariants
from memsolve.rounds.state import StateStore

from ..conftest import make_policy, write
from .helpers import policy_copy


def test_bundled_baseline_passes(cli) -> None:
    result = cli("audit", "--policy", "policies/team-a.yaml", "--baseline", "audits/team-a.json")
    assert result.exit_code == 0, result.stdout
    assert "0 changed outcome(s), 0 invariant violation(s)" in result.stdout


def test_audit_fails_when_one_rule_changes(cli, tmp_path: Path) -> None:
    changed = policy_copy(tmp_path, lambda s: s.replace("ttl_by_store: {working: 48}", "ttl_by_store: {working: 96}"))
    result = cli("audit", "--policy", changed, "--baseline", "audits/team-a.json", "--format", "json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    bad = [f for f in data["findings"] if not f["passed"]]
    assert [(f["name"], f["message"].split(" (")[0]) for f in bad] == [
        ("a-working-stale", "excluded by freshness -> dropped")]
    assert bad[0]["location"]["line"] == 20  # the freshness rule in the policy
    assert bad[0]["data"]["before"] == {"outcome": "excluded", "rule": "freshness",
                                        "reason": "expired: age 70 exceeds ttl 48 (store `working`)"}


def test_write_baseline_never_overwrites_silently(cli, tmp_path: Path) -> None:
    target = tmp_path / "b.json"
    assert cli("audit", "--policy", "policies/team-a.yaml", "--write-baseline", target).exit_code == 0
    first = target.read_text()
    again = cli("audit", "--policy", "policies/team-a.yaml", "--write-baseline", target)
    assert again.exit_code == 2 and "--force" in again.stderr
    assert target.read_text() == first
    assert json.loads(first)["outcomes"]["a-approval-v2"] == {
        "outcome": "excluded", "rule": "version-authority",
        "reason": "authority bound to v2, current of `design-doc` is v3"}


def test_invariants_catch_a_broken_isolation(cli, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tenant isolation broken behind the pipeline's back (the scope stage lets every record in
    and every record passes the tenant rule): the invariants, which re-read the records file
    rather than trusting the run, report the leak without naming the other tenant's records."""
    import numpy as np

    from memsolve import pipeline
    from memsolve.policies.verdicts import Judgement, RuleMask, Verdict
    real = pipeline.evaluate
    broken = RuleMask("tenant", np.array([]), lambda row: Verdict("tenant", True, "broken", {}))
    replaced = []

    def no_isolation(*args, **kwargs):
        judged = real(*args, **kwargs)
        tenant = judged.masks[0]
        replaced.extend(np.flatnonzero(~tenant.passed).tolist())
        everyone = RuleMask(broken.rule, np.ones_like(tenant.passed), broken.explain)
        return Judgement.of(judged.columns, (everyone, *judged.masks[1:]))

    monkeypatch.setattr(pipeline, "evaluate", no_isolation)
    monkeypatch.setattr(pipeline, "scope", lambda records, ctx: records)  # the run sees every record
    result = cli("audit", "--policy", "policies/team-a.yaml", "--baseline", "audits/team-a.json", "--format", "json")
    assert replaced, "the wrapper never ran, or team-a excludes no record by tenant"
    assert result.exit_code == 1
    failing = [f for f in json.loads(result.stdout)["findings"] if not f["passed"]]
    tenant = [f for f in failing if f["code"] == "invariant-tenant"]
    assert tenant and "b-" not in json.dumps(tenant) and "untenanted" not in json.dumps(tenant)


def test_audit_needs_a_baseline_option(cli) -> None:
    assert cli("audit", "--policy", "policies/team-a.yaml").exit_code == 2


def test_bad_baseline_file(cli, tmp_path: Path) -> None:
    bad = write(tmp_path, "b.json", {"outcomes": []})
    result = cli("audit", "--policy", "policies/team-a.yaml", "--baseline", bad)
    assert result.exit_code == 2 and "not a memsolve baseline" in result.stderr


# --- isolation as a property -----------------------------------------------------------

TENANTS = ["a", "b"]


@st.composite
def multi_tenant(draw):
    n = draw(st.integers(1, 12))
    items = []
    for i in range(n):
        item = {"id": f"r{i}", "timestamp": draw(st.integers(0, 20)), "tokens": draw(st.integers(0, 8)),
                "utility": draw(st.floats(0, 10))}
        if draw(st.booleans()):
            item["tenant"] = draw(st.sampled_from(TENANTS))
        if draw(st.booleans()):
            item["key"] = draw(st.sampled_from(["k1", "k2"]))
        if draw(st.booleans()):
            item["ttl"] = draw(st.integers(0, 15))
        if draw(st.booleans()):
            item["authority"] = True
            item["version"] = draw(st.sampled_from(["v1", "v2"]))
            if draw(st.booleans()):
                item["document"] = draw(st.sampled_from(["d1", "d2"]))
        items.append(item)
    return items


@settings(max_examples=150, deadline=None)
@given(multi_tenant(), st.sampled_from(TENANTS), st.integers(0, 30), st.sampled_from(["cp-sat", "dp", "greedy"]),
       st.sampled_from([None, 2]))
def test_isolation_invariants_hold_for_every_engine(items, tenant, budget, engine, max_records) -> None:
    limit = "" if max_records is None else f", max_records: {max_records}"
    policy = make_policy(
        f"tenant: {tenant}\nbudget: {{tokens: {budget}{limit}}}\ncontext: {{now: 20}}\n",
        rules="- freshness: {default_ttl: 10}\n- version_authority: {current_versions: {d1: v2}, current_version: v1}\n"
              "- latest_key: {}\n",
    )
    recs = memsolve.load_records(items)
    result = memsolve.solve(policy, recs, engine=engine)
    broken = [f for f in invariants(policy, recs, None, result) if not f.passed]
    assert broken == []
    _no_superseded(items, result)


def _no_superseded(items, result) -> None:
    newest: dict[tuple, tuple] = {}
    for pos, item in enumerate(items):
        if "key" in item:
            group = (item.get("tenant"), item["key"])
            newest[group] = max(newest.get(group, (-1, -1)), (item["timestamp"], pos))
    for s in result.selected:
        pos = int(s.id[1:])
        item = items[pos]
        if "key" in item:
            assert newest[(item.get("tenant"), item["key"])] == (item["timestamp"], pos)


@settings(max_examples=40, deadline=None)
@given(st.lists(multi_tenant(), min_size=1, max_size=4), st.sampled_from(TENANTS))
def test_isolation_invariants_hold_through_rounds(tmp_path_factory, batches, tenant) -> None:
    store = StateStore(tmp_path_factory.mktemp("iso") / "s.db")
    head = f"tenant: {tenant}\nbudget: {{tokens: 12}}\ncontext: {{now: 20}}\npricing: {{c: 5, q0: 0.5}}\n"
    policy = make_policy(head,
                         rules="- freshness: {default_ttl: 10}\n- version_authority: {current_version: v1}\n"
                               "- latest_key: {}\n")
    for items in batches:
        recs = memsolve.load_records(items)
        result = store.round(policy, recs, agent="iso")
        assert all(f.passed for f in invariants(policy, recs, None, result))
        _no_superseded(items, result)
