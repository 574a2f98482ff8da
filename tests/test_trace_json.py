"""The trace written from the arrays (memsolve.trace_json) against the entry objects it stands for."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import memsolve
from memsolve.policies.verdicts import Ceiling
from memsolve.pricing import RoundPrice
from memsolve.records import DELETE
from memsolve.result import Trace, json_text
from memsolve.trace_json import json_ints, json_numbers, json_strings

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
    selected, excluded = result.selected.json_lines(), result.excluded.json_lines()
    assert lines == [json_text(entry.to_dict()) for entry in result.trace]
    assert selected == [json_text(chosen.to_dict()) for chosen in result.selected]
    assert excluded == [json_text(record.to_dict()) for record in result.excluded]


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
    # and the excluded list's reasons, worded for all its rows at once (RuleMask.reasons)
    assert result.excluded.json_lines() == [json_text(record.to_dict()) for record in result.excluded]


STORE_NAMES = ("semantic", 'we"ird', "back\\slash", "ü-store", "😀")


@settings(max_examples=120, deadline=None)
@given(st.sampled_from(["number", "rfc3339"]), st.lists(st.tuples(
    st.integers(0, 399_999), st.sampled_from([None, *STORE_NAMES]), st.sampled_from(["absent", None, 0, 90, 5000.5])),
    min_size=1, max_size=10), st.sampled_from([0, 0.25, 1]))
def test_age_verdicts_worded_for_many_rows_read_as_each_rows_own(kind, rows, fraction) -> None:
    # max age and freshness write their verdicts' JSON for all rows at once (RuleMask.written):
    # distinct and fractional times, both kinds of time, ttls of the record, its store or the policy
    stores = json_text(list(STORE_NAMES))
    rfc = kind == "rfc3339"
    by_store = f'{{{json_text(STORE_NAMES[1])}: {"5m" if rfc else 300}, {json_text(STORE_NAMES[4])}: null}}'
    limit, ttl = ("1d", "2h") if rfc else (86400, 7200)
    policy = memsolve.policy_from_text(
        "apiVersion: memsolve/v1\nkind: MemoryPolicy\nmetadata: {name: t}\nbudget: {tokens: 3}\n"
        f"stores: {stores}\nrules:\n  - max_age: {json_text(limit)}\n"
        f"  - freshness: {{default_ttl: {json_text(ttl)}, ttl_by_store: {by_store}}}\n", "t.yaml")
    start = 1_767_225_600  # 2026-01-01T00:00:00Z
    items = []
    for i, (offset, store, own_ttl) in enumerate(rows):
        stamp = start + offset + (fraction if i % 2 else 0)
        item = {"id": f"r{i}", "tokens": 1, "utility": 1.0,
                "timestamp": memsolve.timeutil.format_time(stamp, "rfc3339") if rfc else stamp}
        if store is not None:
            item["store"] = store
        if own_ttl != "absent":  # in seconds, written with a unit where times are RFC 3339
            item["ttl"] = f"{own_ttl}s" if rfc and own_ttl is not None else own_ttl
        items.append(item)
    now = start + 400_000
    context = memsolve.Context(now=memsolve.timeutil.format_time(now, "rfc3339") if rfc else now)
    result = memsolve.solve(policy, memsolve.load_records(items), context)
    lines = result.trace.json_lines()
    assert lines == [json_text(entry.to_dict()) for entry in result.trace]
    assert all('"rule": "max-age"' in line and '"rule": "freshness"' in line for line in lines)


def test_strings_of_a_str_subclass_read_as_their_characters_everywhere() -> None:
    # a str Enum formats itself `Key.PLAN` in an f-string while JSON writes `plan`: records keep
    # plain strings, so reasons and evidence (and the two ways of writing them) agree
    import enum

    class Key(str, enum.Enum):
        PLAN = "plan"
        ID = "i\\d"

    policy = memsolve.policy_from_text(
        "apiVersion: memsolve/v1\nkind: MemoryPolicy\nmetadata: {name: t}\nbudget: {tokens: 3}\n"
        "stores: [semantic, plan]\nfidelity: [plan, raw]\n"
        "rules:\n  - latest_key: {}\n  - freshness: {ttl_by_store: {plan: 1}}\n", "t.yaml")
    records = memsolve.load_records([
        {"id": Key.ID, "timestamp": 1, "key": Key.PLAN, "store": Key.PLAN,
         "representations": {Key.PLAN: {"tokens": 1, "utility": 1.0, "text": Key.PLAN}}},
        {"id": "b", "timestamp": 2, "key": "plan", "tokens": 1, "utility": 1.0}])
    first = records.records[0]
    assert all(type(value) is str for value in (first.id, first.key, first.store, first.levels[0].name,
                                                first.levels[0].text))
    result = memsolve.solve(policy, records, memsolve.Context(now=5))
    assert result.trace.json_lines() == [json_text(entry.to_dict()) for entry in result.trace]
    assert "Key." not in result.to_json()


def test_a_set_holding_one_record_twice_words_its_latest_key_verdicts_by_row() -> None:
    # a RecordSet built by hand may hold the same record object twice (the loader would refuse the
    # second; with no tenant in force admission does): the verdict follows the row (the later one
    # is the latest), in the entries and in the JSON written from the arrays
    policy = memsolve.policy_from_text(
        "apiVersion: memsolve/v1\nkind: MemoryPolicy\nmetadata: {name: t}\ntenant: A\nbudget: {tokens: 3}\n"
        "rules:\n  - latest_key: {}\n", "t.yaml")
    record = memsolve.load_records([{"id": "a", "tenant": "A", "timestamp": 1, "key": "k", "tokens": 1,
                                     "utility": 1.0}]).records[0]
    result = memsolve.solve(policy, memsolve.records.RecordSet((record, record)), memsolve.Context(now=5))
    assert [entry.rules[-1].passed for entry in result.trace] == [False, True]
    assert result.trace.json_lines() == [json_text(entry.to_dict()) for entry in result.trace]


_EDGES = [0.0, -0.0, 1e-4, -1e-4, 9.999999999999999e-05, 1.0000000000000002e-4, 1e16, 9999999999999998.0, -1e16,
          1e15, 1.5e16, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 0.1, 100.0, 123456.789, 1e-05]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from(_EDGES), max_size=40))
def test_numbers_are_written_as_the_encoder_writes_them(values) -> None:
    # orjson's digits, repr's exponents: every finite float as json_text writes it, the
    # boundaries of repr's exponent notation (1e-4, 1e16) and subnormals included
    written = json_numbers(np.array(values, dtype=np.float64))
    assert written == [json_text(value) for value in values]
    assert json_numbers(np.array(_EDGES)) == [float.__repr__(value) for value in _EDGES]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-(2**63), 2**63 - 1) | st.sampled_from([0, -1, 2**63 - 1, -(2**63)]), max_size=40))
def test_integers_are_written_as_the_encoder_writes_them(values) -> None:
    # orjson's decimal digits: every 64-bit integer as json_text writes it
    assert json_ints(np.array(values, dtype=np.int64)) == [json_text(value) for value in values]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.none() | st.text() | st.sampled_from(['q"uote', "back\\slash", "\x7f", "\u2028", "\ud800"]),
                max_size=20))
def test_strings_are_written_as_the_encoder_writes_them(values) -> None:
    assert json_strings(values) == [json_text(value) for value in values]


def test_texts_of_chosen_levels_are_written_whether_or_not_the_records_have_any() -> None:
    # the selected list writes every text null at once where no record (nor any level) has one,
    # each chosen level's text (else its record's) otherwise
    policy = memsolve.policy_from_text(
        "apiVersion: memsolve/v1\nkind: MemoryPolicy\nmetadata: {name: t}\nbudget: {tokens: 10}\n", "t.yaml")
    bare = [{"id": f"r{i}", "timestamp": i, "tokens": 1, "utility": 1.0} for i in range(3)]
    texts = [*bare, {"id": "t", "timestamp": 4, "text": "own", "tokens": 1, "utility": 1.0},
             {"id": "l", "timestamp": 5, "representations": {"raw": {"tokens": 2, "utility": 1.0, "text": "lvl"}}}]
    for items in (bare, texts):
        result = memsolve.solve(policy, memsolve.load_records(items), memsolve.Context(now=5))
        assert result.selected.json_lines() == [json_text(chosen.to_dict()) for chosen in result.selected]
        assert result.trace.json_lines() == [json_text(entry.to_dict()) for entry in result.trace]
    assert '"text": "lvl"' in result.to_json() and '"text": "own"' in result.to_json()


@st.composite
def valid_records(draw: st.DrawFn) -> list[dict]:
    """Records admission keeps at every moment below (unique ids, past timestamps, known levels,
    utilities given or derivable): a run over them keeps the record set's columns, and what the
    writer kept in them."""
    items = []
    for i in range(draw(st.integers(1, 12))):
        reps = {}
        for level in draw(st.lists(st.sampled_from(LEVELS), min_size=1, max_size=3, unique=True)):
            reps[level] = {"tokens": draw(st.integers(0, 6))}
            if draw(st.integers(0, 3)):
                reps[level]["utility"] = draw(st.sampled_from([0, 0.5, 1, 2, 3.25, 1e-05]))
            if draw(st.booleans()):
                reps[level]["text"] = draw(st.sampled_from(["deploy", "budget cache", "é\n"]))
        items.append({"id": f"r{i}", "timestamp": draw(st.sampled_from((8, 10, 11, 13, 17))),
                      "key": draw(st.sampled_from(("k1", "k2"))), "text": "deploy failed", "representations": reps})
    return items


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(valid_records(), st.data())
def test_turns_over_one_record_set_write_what_each_turn_decided(items, data) -> None:
    # the columns keep what the writer wrote (ids, entry heads, each row's offers with the numbers
    # they were written from) for the next turn: turns that change prices, ceilings, queries and
    # the moment over the same records write each turn's own entries, never a kept text of another
    policy = memsolve.policy_from_text(
        "apiVersion: memsolve/v1\nkind: MemoryPolicy\nmetadata: {name: t}\n"
        f"budget: {{tokens: {data.draw(st.integers(0, 12))}}}\nfidelity: [raw, summary, keywords]\n"
        "utility: {from: relevance, temperature: 0.5, retention: {summary: 0.5}}\n"
        "rules:\n  - max_age: 9\n  - latest_key: {}\n  - relevance: {recency_weight: 0.25, half_life: 5}\n", "t.yaml")
    records = memsolve.load_records(items)
    for _ in range(data.draw(st.integers(2, 5))):
        lam = data.draw(st.sampled_from([0.0, 0.5, 3.0]))
        ceilings = {f"r{i}": Ceiling(data.draw(st.sampled_from(LEVELS + (DELETE,))), 3)
                    for i in data.draw(st.lists(st.integers(0, 11), max_size=4, unique=True))}
        context = memsolve.Context(now=data.draw(st.sampled_from([17, 20])),
                                   query=data.draw(st.sampled_from(["deploy", "budget cache", "failed"])))
        result = memsolve.pipeline.run(policy, records, context, ceilings=ceilings or None, trace="full",
                                       round_price=RoundPrice(2, 1.0, lam) if lam else None).result
        assert result.trace.json_lines() == [json_text(entry.to_dict()) for entry in result.trace]
        assert result.selected.json_lines() == [json_text(chosen.to_dict()) for chosen in result.selected]
        assert result.excluded.json_lines() == [json_text(record.to_dict()) for record in result.excluded]
