"""The result's long lists written as JSON item by item, against the encoder they stand in for."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import memsolve
from memsolve.result import Chosen, Dropped, Excluded, dumps_by_line, json_text

_text = st.one_of(st.text(), st.sampled_from(['"', "\\", "\n\t\x00\x1f\x7f", "é\u2028\u2029😀", "</script>", ""]))


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.none(), _text), _text, _text)
def test_an_excluded_or_dropped_record_is_written_as_the_encoder_writes_it(rid, rule, reason) -> None:
    assert Excluded(rid, rule, reason).to_json() == json_text(Excluded(rid, rule, reason).to_dict())
    assert Dropped(rid, reason).to_json() == json_text(Dropped(rid, reason).to_dict())


_number = st.one_of(st.integers(-(2**70), 2**70), st.floats(allow_nan=False, allow_infinity=False),
                    st.sampled_from([0.0, -0.0, 1e16, 1e-7, 123456789.0, 2.5e-320, 1e308]))


@settings(max_examples=300, deadline=None)
@given(_text, _text, st.integers(0, 2**70), _number, st.one_of(st.none(), _text))
def test_a_chosen_record_is_written_as_the_encoder_writes_it(rid, level, tokens, utility, text) -> None:
    chosen = Chosen(rid, level, tokens, utility, text)
    assert chosen.to_json() == json_text(chosen.to_dict())


def test_to_json_is_the_result_as_a_dict_written_line_by_line() -> None:
    policy = memsolve.policy_from_text("apiVersion: memsolve/v1\nkind: MemoryPolicy\nmetadata: {name: r}\n"
                                       "budget: {tokens: 4}\non_invalid_record: exclude\n"
                                       "rules:\n  - latest_key: {}\n  - max_age: 5\n")
    items = [{"id": f"r{i}", "timestamp": i, "key": f"k{i % 3}", "tokens": 2, "utility": 1.0 + i % 4}
             for i in range(12)] + [{"id": "bad", "timestamp": "x", "tokens": 1}]
    for trace in ("full", "excluded", "none"):
        result = memsolve.solve(policy, memsolve.load_records(items), memsolve.Context(now=12), trace=trace)
        assert result.excluded and result.dropped  # both lists are written item by item
        assert result.to_json() == dumps_by_line(result.to_dict()) == "".join(result.json_parts())


def test_a_results_lists_pickle_as_their_items() -> None:
    # their builders and JSON writers are closures over the run: a list pickles as what it holds
    import pickle

    policy = memsolve.policy_from_text("apiVersion: memsolve/v1\nkind: MemoryPolicy\nmetadata: {name: t}\n"
                                       "budget: {tokens: 4}\n", "t.yaml")
    items = [{"id": f"r{i}", "timestamp": i, "tokens": 2, "utility": 1.0 + i} for i in range(4)]
    result = memsolve.solve(policy, memsolve.load_records(items), memsolve.Context(now=9))
    for listed in (result.selected, result.dropped, result.excluded, result.trace):
        copy = pickle.loads(pickle.dumps(listed))
        assert copy == listed and type(copy) is type(listed)
    assert [c.id for c in pickle.loads(pickle.dumps(result.selected))] == ["r2", "r3"]
