"""The trace written from the arrays (memsolve.trace_json) against the entry objects it stands for."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import memsolve
from memsolve.policies.verdicts import Ceiling
from memsolve.pricing import RoundPrice
from memsolve.records import DELETE
from memsolve.result import Trace, json_text

from .policies.test_columns import LEVELS, a_case


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(a_case(), st.sampled_from(["full", "excluded"]), st.sampled_from(["dp", "greedy", "cp-sat"]), st.data())
def test_the_lines_from_the_arrays_are_the_entries_json(case, trace, engine, data) -> None:
    policy, records, context, _ = case
    policy = replace(policy, on_invalid_record="exclude")  # invalid records in the trace too
    ceilings = None
    if data.draw(st.booleans()):  # a round with state: the fidelity-ceiling rule too
        ceilings = {f"r{i}": Ceiling(data.draw(st.sampled_from(LEVELS + (DELETE,))), 3)
                    for i in data.draw(st.lists(st.integers(0, 14), max_size=6, unique=True))}
    # a round's price (values are utility less price x tokens) or none (each value is its utility)
    lam = data.draw(st.sampled_from([0.0, 0.5, 3.0]))
    round_price = RoundPrice(2, 1.0, lam) if lam else None
    try:
        result = memsolve.pipeline.run(policy, records, context, engine=engine, trace=trace, ceilings=ceilings,
                                       round_price=round_price).result
    except memsolve.InputError:
        return  # the current session only, and no session given: no result
    assert isinstance(result.trace, Trace)
    lines = result.trace.json_lines()  # before any entry object is built
    assert lines == [json_text(entry.to_dict()) for entry in result.trace]


def test_derived_utilities_repairs_and_invalid_records_are_written_as_the_entries_write_them() -> None:
    policy = memsolve.policy_from_text(
        "apiVersion: memsolve/v1\nkind: MemoryPolicy\nmetadata: {name: t}\nbudget: {tokens: 6}\n"
        "on_invalid_record: exclude\nutility: {from: relevance, temperature: 0.5}\n"
        "rules:\n  - relevance: {recency_weight: 0.25, half_life: 5}\n", "t.yaml")
    items = [{"id": "a", "timestamp": 1, "text": "deploy failed", "representations": {
                 "raw": {"tokens": 4}, "summary": {"tokens": 2, "text": "deploy"}}},
             {"id": "b", "timestamp": 2, "text": "rollback deploy", "tokens": 3},
             {"id": "c", "timestamp": 3, "text": "deploy budget", "representations": {
                 "raw": {"tokens": 2, "utility": 0.1}, "summary": {"tokens": 1, "utility": 0.5}}},
             {"id": "bad", "timestamp": "yesterday", "tokens": 1}]
    result = memsolve.solve(policy, memsolve.load_records(items), memsolve.Context(now=4, query="deploy"))
    lines = result.trace.json_lines()
    assert all(any(name in line for line in lines) for name in ('"derived_utility"', '"repairs"', '"invalid"'))
    assert lines == [json_text(entry.to_dict()) for entry in result.trace]


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([None, "k", 'q"uote', "back\\slash", "é", "\x07", "😀", "\U0010ffff"]),
                          st.integers(0, 2)), min_size=1, max_size=12),
       st.sampled_from(["latest-key", "newest-fact"]))
def test_latest_key_verdicts_worded_for_many_rows_read_as_each_rows_own(rows, rule_id) -> None:
    # the latest-key rule writes its verdicts' JSON for all rows at once (RuleMask.written): the
    # same bytes as each row's own verdict, whatever its key and id hold, ties and keyless rows too
    policy = memsolve.policy_from_text(
        "apiVersion: memsolve/v1\nkind: MemoryPolicy\nmetadata: {name: t}\nbudget: {tokens: 3}\n"
        f"rules:\n  - id: {rule_id}\n    latest_key: {{}}\n", "t.yaml")
    ids = ["a", 'i"d', "\\", "ü", "\n", "😀", "\x1f"]
    items = [{"id": f"{ids[i % len(ids)]}{i}", "timestamp": stamp, "tokens": 1, "utility": 1.0,
              **({} if key is None else {"key": key})} for i, (key, stamp) in enumerate(rows)]
    result = memsolve.solve(policy, memsolve.load_records(items), memsolve.Context(now=5))
    lines = result.trace.json_lines()
    assert lines == [json_text(entry.to_dict()) for entry in result.trace]
    assert all(f'"rule": "{rule_id}"' in line for line in lines)
