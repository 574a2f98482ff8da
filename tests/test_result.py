"""The result's long lists written as JSON item by item, against the encoder they stand in for."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import memsolve
from memsolve.result import Dropped, Excluded, _compact, dumps_by_line

_text = st.one_of(st.text(), st.sampled_from(['"', "\\", "\n\t\x00\x1f\x7f", "é\u2028\u2029😀", "</script>", ""]))


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.none(), _text), _text, _text)
def test_an_excluded_or_dropped_record_is_written_as_the_encoder_writes_it(rid, rule, reason) -> None:
    assert Excluded(rid, rule, reason).to_json() == _compact(Excluded(rid, rule, reason).to_dict())
    assert Dropped(rid, reason).to_json() == _compact(Dropped(rid, reason).to_dict())


def test_to_json_is_the_result_as_a_dict_written_line_by_line() -> None:
    policy = memsolve.policy_from_text("apiVersion: memsolve/v1\nkind: MemoryPolicy\nmetadata: {name: r}\n"
                                       "budget: {tokens: 4}\non_invalid_record: exclude\n"
                                       "rules:\n  - latest_key: {}\n  - max_age: 5\n")
    items = [{"id": f"r{i}", "timestamp": i, "key": f"k{i % 3}", "tokens": 2, "utility": 1.0 + i % 4}
             for i in range(12)] + [{"id": "bad", "timestamp": "x", "tokens": 1}]
    for trace in ("full", "excluded", "none"):
        result = memsolve.solve(policy, memsolve.load_records(items), memsolve.Context(now=12), trace=trace)
        assert result.excluded and result.dropped  # both lists are written item by item
        assert result.to_json() == dumps_by_line(result.to_dict())
