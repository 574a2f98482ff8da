"""The vectorised rules and compile stage against the record-by-record oracle they replaced.

tests/policies/oracle_rules.py is the rule engine as it was before the columns; _compile_oracle
below is the old compile loop. On random records and policies (every rule type, ties, ceilings,
derived utilities, invalid records) both must give the same verdicts (rule, pass, reason,
evidence, score), the same deciding rule, and the same instance, repairs and derivations.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import memsolve
from memsolve import pipeline
from memsolve.context import resolve_context
from memsolve.policies.rules import evaluate
from memsolve.policies.verdicts import Ceiling
from memsolve.records import DELETE

from ..conftest import make_policy
from . import oracle_rules

WORDS = ("deploy", "failed", "rollback", "budget", "tenant", "cache", "alpha", "beta")
LEVELS = ("raw", "summary", "keywords")
NOW = 20


@st.composite
def a_record(draw: st.DrawFn, index: int) -> dict:
    item: dict = {"id": f"r{draw(st.integers(0, 12)) if draw(st.booleans()) else index}",
                  # few times, each rule's boundary (age == limit) among them, so that boundaries and ties
                  # come up; NOW + 1 is refused at admission
                  "timestamp": draw(st.sampled_from((8, 10, 11, 13, 17, 20, NOW + 1)))}
    for name, values in (("tenant", ("a", "b")), ("store", ("semantic", "episodic", "working", "nowhere")),
                         ("session", ("s1", "s2")), ("key", ("k1", "k2", "k3")), ("version", ("v1", "v2")),
                         ("document", ("d1", "d2", ""))):
        if draw(st.booleans()):
            item[name] = draw(st.sampled_from(values))
    if draw(st.booleans()):
        item["ttl"] = draw(st.sampled_from((None, *range(13))))
    if draw(st.booleans()):
        item["authority"] = draw(st.booleans())
    if draw(st.booleans()):
        item["text"] = " ".join(draw(st.lists(st.sampled_from(WORDS), max_size=5)))
    levels = draw(st.lists(st.sampled_from(LEVELS), min_size=1, max_size=3, unique=True))
    if not draw(st.integers(0, 9)):
        levels.append("unknown")  # refused at admission
    reps = {}
    for level in levels:
        rep: dict = {"tokens": draw(st.integers(0, 6))}
        if draw(st.integers(0, 3)):
            rep["utility"] = draw(st.sampled_from([0, 0.5, 1, 2, 3.25]))
        if draw(st.booleans()):
            rep["text"] = " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=4)))
        reps[level] = rep
    item["representations"] = reps
    return item


RULES = {
    "stores": "- stores: {allow: [semantic, working]}",
    "sessions": "- sessions: {include_previous: false}",
    "previous": "- id: previous\n  sessions: {include_previous: true}",
    "max_age": "- max_age: 9",
    "freshness": "- freshness: {default_ttl: 7, ttl_by_store: {working: 3, episodic: null}}",
    "authority": "- version_authority: {current_version: v2, current_versions: {d1: v1}}",
    "latest": "- latest_key: {}",
    "tfidf": "- relevance: {recency_weight: 0.25, half_life: 5}",
    "bm25": "- id: bm25\n  relevance: {scorer: bm25}",
}


@st.composite
def a_case(draw: st.DrawFn) -> tuple[memsolve.Policy, memsolve.RecordSet, memsolve.Context, dict | None]:
    records = [draw(a_record(i)) for i in range(draw(st.integers(0, 14)))]
    chosen = draw(st.lists(st.sampled_from(sorted(RULES)), max_size=6, unique=True))
    budget = draw(st.integers(0, 12))
    body = f"budget: {{tokens: {budget}}}\nfidelity: [raw, summary, keywords]\nstores: [semantic, episodic, working]\n"
    if draw(st.booleans()):
        body += "tenant: a\n"
    if draw(st.booleans()):
        body += "utility: {from: relevance, temperature: 0.5, retention: {summary: 0.5}}\n"
    policy = make_policy(body, rules="\n".join(RULES[name] for name in chosen) + "\n" if chosen else "")
    query = " ".join(draw(st.lists(st.sampled_from(WORDS), max_size=3))) or None
    context = memsolve.Context(now=NOW, session="s1", query=query)
    ceilings = None
    if draw(st.booleans()):
        ceilings = {f"r{i}": Ceiling(draw(st.sampled_from(LEVELS + (DELETE,))), 3)
                    for i in draw(st.lists(st.integers(0, 14), max_size=6, unique=True))}
    return policy, memsolve.load_records(records), context, ceilings


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(a_case())
def test_the_masks_give_the_oracles_verdicts(case) -> None:
    policy, records, context, ceilings = case
    ctx = resolve_context(policy, records, context)
    admitted = pipeline.admit(policy, pipeline.scope(records, ctx), ctx)
    judged = evaluate(policy, admitted.columns, ctx, ceilings)
    oracle = oracle_rules.evaluate(policy, admitted.valid, ctx, ceilings)
    assert len(judged.columns) == len(oracle)
    # rule by rule over every row (a trace's way) gives each row's verdicts, as row by row does
    assert judged.verdict_rows(list(range(len(oracle)))) == [expected.verdicts for expected in oracle]
    for row, expected in enumerate(oracle):
        got = judged.verdicts(row)
        assert got.record is expected.record
        assert got.verdicts == expected.verdicts
        assert [bool(mask.passed[row]) for mask in judged.masks] == [v.passed for v in expected.verdicts]
        assert [v.score for v in got.verdicts] == [v.score for v in expected.verdicts]
        assert [mask.reason_of(row) for mask in judged.masks] == [v.reason for v in expected.verdicts]
        assert bool(judged.eligible[row]) == expected.eligible
        if not expected.eligible:
            assert judged.deciding_verdict(row) == expected.deciding
            assert judged.deciding_reason(row) == (expected.deciding.rule, expected.deciding.reason)
        relevance = None if judged.relevance is None else float(judged.relevance[row])
        assert relevance == expected.relevance


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(a_case())
def test_the_compiled_instance_is_the_oracles(case) -> None:
    policy, records, context, ceilings = case
    try:
        prep = pipeline.prepare(policy, records, context, ceilings=ceilings)
    except memsolve.InputError:
        return  # an invalid record under on_invalid_record: error, or no query for a derived utility
    eligible = [row for row in range(len(prep.judgement.eligible)) if prep.judgement.eligible[row]]
    rows = [prep.judgement.columns.records[row] for row in eligible]
    scores = None if prep.judgement.relevance is None else [float(prep.judgement.relevance[r]) for r in eligible]
    expected = _compile_oracle(rows, policy.fidelity, scores, policy.utility.retention, policy.utility.temperature,
                               None if ceilings is None else {rid: c.level for rid, c in ceilings.items()})
    got = prep.compiled
    tokens, utility, mask, repairs, derived = expected
    assert np.array_equal(got.instance.tokens, tokens)
    assert np.array_equal(got.instance.utility, utility)
    assert np.array_equal(got.instance.mask, mask)
    for row in range(len(rows)):
        assert got.repairs(row) == repairs.get(row, ())
        assert got.derived(row) == derived.get(row)


def _compile_oracle(records, fidelity, scores, retention, temperature, ceilings):
    """The compile loop as it was before the columns (tokens counted in words)."""
    from memsolve.solver.compile import Derived, Repair

    levels = tuple(fidelity)
    column = {name: j for j, name in enumerate(levels)}
    n, k = len(records), len(levels)
    tokens = np.zeros((n, k), dtype=np.int64)
    utility = np.zeros((n, k), dtype=np.float64)
    mask = np.zeros((n, k), dtype=bool)
    repairs, derived = {}, {}
    known = [s for s in scores if s is not None] if scores is not None else []
    best_score = max(known, default=0.0)
    retention = retention or {}
    for row, record in enumerate(records):
        lowest_allowed = column.get((ceilings or {}).get(record.id, levels[0]), 0)
        for level in record.levels:
            j = column[level.name]
            mask[row, j] = j >= lowest_allowed
            text = level.text if level.text is not None else record.text or ""
            tokens[row, j] = level.tokens if level.tokens is not None else len(text.split())
            if level.utility is not None:
                utility[row, j] = level.utility
            else:
                score = scores[row]
                sharpened = math.exp((score - best_score) / temperature)
                derived[row] = Derived(score, best_score, temperature, sharpened)
                utility[row, j] = retention.get(level.name, 1.0 if j == 0 else 0.0) * sharpened
        fixed, running = [], 0.0
        for j in range(k - 1, -1, -1):
            if not mask[row, j]:
                continue
            if utility[row, j] < running:
                fixed.append(Repair(levels[j], float(utility[row, j]), running))
                utility[row, j] = running
            running = float(utility[row, j])
        if fixed:
            repairs[row] = tuple(reversed(fixed))
    return tokens, utility, mask, repairs, derived
