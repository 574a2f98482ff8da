"""The fast path of load_records (memsolve.decode) against the exact path it stands in for.

The exact path (parse, schema, semantic checks) is the contract; these tests load the same text
or data both ways and require equal record sets: the same records, the same invalid ones with
the same error at the same place, or the same file-level error.
"""

from __future__ import annotations

import enum
import gc
import hashlib
import json
import os
import random
import sys
from collections import OrderedDict, UserDict
from datetime import date, datetime, timezone
from decimal import Decimal
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import memsolve
from memsolve import decode, records, source, timeutil
from memsolve.level import Level
from memsolve.records import InvalidRecord, RecordSet
from memsolve.source import jsonl_lines

ROOT = Path(__file__).resolve().parents[1]


def exact_from_text(text: str, file: str) -> RecordSet:
    return records._jsonl(text, file, "", fast=False)  # every line by the exact path


def described(outcome: RecordSet | memsolve.InputError) -> Any:
    """What a load gave, comparable: each record, or each invalid one's error and place."""
    if isinstance(outcome, memsolve.InputError):
        return ("error", outcome.render())
    # a record by its repr too: equality alone takes 1 for 1.0 and True for 1
    return [("invalid", r.id, r.position, r.tenant, r.error.render()) if isinstance(r, InvalidRecord) else (r, repr(r))
            for r in outcome.records]


def both_from_text(text: str, folder: Path) -> tuple[Any, Any]:
    path = folder / "r.jsonl"
    path.write_text(text, encoding="utf-8")
    try:
        fast: Any = memsolve.load_records(path)
    except memsolve.InputError as error:
        fast = error
    try:
        exact: Any = exact_from_text(text, str(path))
    except memsolve.InputError as error:
        exact = error
    return described(fast), described(exact)


_BIG = sys.float_info.max
_edges = st.sampled_from([0, -1, 1, 2**53, 2**63 - 1, 2**63, 2**63 + 1, -(2**63), 10**12, 10**12 + 1, 10**15,
                          10**15 + 1, 0.0, -0.0, 1e-300, 5e-324, 0.5, 1.5, _BIG, -_BIG, 1e15, 1.0000000000000002e15])
_strings = st.one_of(st.text(max_size=4), st.sampled_from(["", '":', 'a"b', "é", "٢", "\x00", "24h", "7d", "-1h",
                                                           "2026-11-30T09:00:00Z", "2026-13-01T00:00:00Z",
                                                           "2026-02-30T12:00:00Z", "0001-01-01T00:00:00+01:00",
                                                           "2026-11-30T09:00:00+05:30", "delete", "raw"]))
_values = st.one_of(st.none(), st.booleans(), st.integers(-3, 10**13), _edges, st.floats(allow_nan=False), _strings,
                    st.lists(st.integers(), max_size=2),
                    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))
_ids = st.lists(st.one_of(_strings, st.integers()), max_size=3)
_level = st.fixed_dictionaries({}, optional={"tokens": st.one_of(st.integers(0, 50), _values),
                                             "utility": st.one_of(st.floats(0, 10), _values),
                                             "text": st.one_of(st.text(max_size=6), _values),
                                             "covers": st.one_of(_ids, _values), "extra": _values,
                                             "name": st.one_of(st.sampled_from(["", "raw", "x"]), _values)})
_junk = st.fixed_dictionaries(
    {"id": st.one_of(st.sampled_from(["a", "b", "c"]), _strings, st.integers()),
     "timestamp": st.one_of(st.integers(0, 100), _values)},
    optional={
        **{name: st.one_of(st.sampled_from(["t1", "t2"]), _values) for name in ("tenant", "store", "session", "key")},
        **{name: _values for name in ("version", "document", "decision_value", "timestmp")},
        "ttl": st.one_of(st.integers(0, 50), _values),
        "authority": _values,
        "text": st.one_of(st.text(max_size=8), _values),
        "tokens": st.one_of(st.integers(0, 50), _values),
        "utility": st.one_of(st.floats(0, 10), _values),
        "covers": st.one_of(_ids, _values),
        "score": st.one_of(st.floats(-0.5, 1.5), _values),
        "metadata": st.one_of(_values, st.dictionaries(st.text(max_size=3), st.recursive(
            st.one_of(st.integers(), st.floats(allow_nan=False), st.text(max_size=3)),
            lambda inner: st.lists(inner, max_size=2), max_leaves=4), max_size=2)),
        "representations": st.one_of(_values, st.dictionaries(st.sampled_from(["raw", "summary", "delete", "gist"]),
                                                              st.one_of(_level, _values), max_size=3)),
    },
)
# records the fast path takes (mostly): every field of a valid kind, values at the edges
_number = st.one_of(st.integers(-(2**63), 2**63), st.floats(allow_nan=False, allow_infinity=False), _edges)
_size = st.one_of(st.integers(0, 60), st.sampled_from([10**12, 10**12 + 1]))
_worth = st.one_of(st.floats(0, 1e15), st.integers(0, 100), st.sampled_from([1e-300, 1e15, 1e15 + 1]))
_name = st.sampled_from(["a", "b", "c", "t1", "t2", "s", "é"])
_good_level = st.fixed_dictionaries({}, optional={"tokens": _size, "utility": _worth, "text": st.text(max_size=6),
                                                  "covers": st.lists(_name, max_size=2)})
_valid = st.fixed_dictionaries(
    {"id": _name, "timestamp": st.one_of(st.integers(0, 10), _number, st.sampled_from([
        "2026-11-30T09:00:00Z", "2026-11-30T09:00:00.5+05:30", "2026-13-01T00:00:00Z", "9999-12-31T23:59:59Z"]))},
    optional={
        **{name: _name for name in ("tenant", "store", "session", "key", "version", "document")},
        "ttl": st.one_of(st.none(), st.integers(0, 50), st.floats(0, 1e300), st.sampled_from(["24h", "7d", "-1h"])),
        "authority": st.booleans(),
        "text": st.text(max_size=8),
        "covers": st.lists(_name, max_size=2),
        "score": st.floats(0, 1),
        "metadata": st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    },
).flatmap(lambda item: st.one_of(
    st.just(item),
    st.fixed_dictionaries({"tokens": _size, "utility": _worth}).map(lambda more: {**item, **more}),
    st.fixed_dictionaries({"decision_value": _worth}, optional={"tokens": _size}).map(lambda more: {**item, **more}),
    st.dictionaries(st.sampled_from(["raw", "summary", "gist", "delete"]), _good_level, max_size=3).map(
        lambda reps: {**item, "representations": reps}),
))
_record = st.one_of(_valid, _valid, _junk)


def _line(item: dict[str, Any], rng: random.Random) -> str:
    text = json.dumps(item, ensure_ascii=rng.random() < 0.5,
                      separators=rng.choice([(",", ":"), (", ", ": "), (",", ": ")]))
    roll = rng.random()
    if roll < 0.05 and len(item) > 1:  # a key written twice
        key = rng.choice(sorted(item))
        text = text[:-1] + f', "{key}": {json.dumps(rng.choice([0, "x", None]))}' + "}"
    elif roll < 0.08:  # a key with a blank before its colon
        text = text.replace('":', '" :', 1)
    elif roll < 0.10:
        text = text[: rng.randrange(len(text))]  # cut short: not JSON
    elif roll < 0.12:
        text = text.replace('"', "\\u0022", 1)
    return text


@settings(max_examples=600, deadline=None)
@given(st.lists(_record, max_size=6), st.randoms(use_true_random=False))
def test_jsonl_fast_path_equals_the_exact_path(tmp_path_factory: Any, items: list[dict[str, Any]],
                                               rng: random.Random) -> None:
    text = "\n".join(_line(item, rng) for item in items) + rng.choice(["", "\n", "\n\n  \n"])
    fast, exact = both_from_text(text, tmp_path_factory.mktemp("d"))
    assert fast == exact


@given(st.lists(st.booleans(), max_size=8))
def test_lines_are_decoded_in_order_with_none_for_each_refused_line(good: list[bool]) -> None:
    texts = [f'{{"id": "r{i}", "timestamp": {i}}}' if ok else f"not a record {i}" for i, ok in enumerate(good)]
    decoded = decode.lines(texts)
    assert [item is not None for item in decoded] == good
    assert [item.id for item in decoded if item is not None] == [f"r{i}" for i, ok in enumerate(good) if ok]


def _decoded_twice(items: list[dict[str, Any]]) -> tuple[list[decode.Decoded], list[decode.Decoded]]:
    """Each item's line decoded, twice over (building records names the decoded levels in place)."""
    lines = [json.dumps(item) for item in items]
    return decode.lines(lines), decode.lines(lines)


@settings(max_examples=400, deadline=None)
@given(st.lists(_record, max_size=6))
def test_the_compiled_key_count_is_the_values_written_back(items: list[dict[str, Any]]) -> None:
    """_scan.written_keys counts the `":` the encoder would write for the decoded values (the
    duplicate-key gate compares it with the text's own count) without writing them."""
    from memsolve import _scan

    decoded, _ = _decoded_twice(items)
    written = source.quote_colons(decode._ENCODE([item for item in decoded if item is not None]))
    assert _scan.written_keys(decoded, decode.DecodedRecord, Level) == written


def test_the_compiled_key_count_counts_quotes_before_colons_in_strings_and_keys() -> None:
    from memsolve import _scan

    item = {"id": 'a":b', "timestamp": 1, "tokens": 3, "covers": ['x":', '""::', ":"],
            "metadata": {'k":': ['v":', {"n": 1.5, 'm":"': None}], "e": {}, ":": ":x"}}
    decoded = decode.lines([json.dumps(item)])
    written = source.quote_colons(decode._ENCODE(decoded))
    # keys; quotes before colons in strings; strings that open with a colon (after their quote)
    assert _scan.written_keys(decoded, decode.DecodedRecord, Level) == written == 5 + 5 + 6 + 3
    assert _scan.written_keys([None, None], decode.DecodedRecord, Level) == 0
    # a value of a type it does not know: None, and keys_kept writes the values back instead
    odd = decode.DecodedRecord("a", 1, metadata={"when": date(2026, 1, 1)})
    assert _scan.written_keys([odd], decode.DecodedRecord, Level) is None
    assert decode.keys_kept(source.quote_colons(decode._ENCODE([odd])), [odd])


@settings(max_examples=400, deadline=None)
@given(st.lists(_record, max_size=6))
def test_the_compiled_record_builder_builds_the_python_records(items: list[dict[str, Any]]) -> None:
    """records._decoded_records (the compiled builder, _decoded_record for what it leaves) gives
    the records the Python loop gives, None where the exact path must read the item."""
    from memsolve import _scan

    compiled, python = _decoded_twice(items)
    expected = records._decoded_records_python(python)
    built, todo = _scan.records_of(compiled, *_BUILDER)
    for record in built:  # a record's levels hold no container: the collector need not track them
        assert record is None or not gc.is_tracked(record.levels)
    for position in todo:
        built[position] = records._decoded_record(compiled[position], position)
    assert list(map(repr, built)) == list(map(repr, expected))  # repr: 1 and 1.0 differ
    assert list(map(repr, records._decoded_records(_decoded_twice(items)[0]))) == list(map(repr, expected))


def test_the_compiled_record_builder_leaves_what_it_does_not_build_to_python() -> None:
    from memsolve import _scan

    items = [{"id": "a", "timestamp": 1, "tokens": 2},  # built: one level, raw
             {"id": "b", "timestamp": "2026-11-30T09:00:00Z", "ttl": "1h", "tokens": 2},  # a duration to parse
             {"id": "c", "timestamp": 1, "tokens": 2, "metadata": {}},  # metadata
             {"id": "d", "timestamp": 1, "representations": {"raw": {"tokens": 1}, "delete": {"tokens": 0}}},
             {"id": "e", "timestamp": 1, "utility": 1, "decision_value": 1, "tokens": 2},
             {"id": "f", "timestamp": 1, "representations": {"raw": {"utility": 1}}},  # nothing to size it by
             {"id": "g", "timestamp": "2026-02-30T09:00:00Z", "tokens": 2},  # a time parse_timestamp refuses
             {"id": "h", "timestamp": 2.5, "ttl": 3, "authority": False, "covers": ["a"], "text": "x",
              "representations": {"raw": {"utility": 1}, "gist": {"tokens": 1, "covers": ["b"]}}},
             {"id": "i", "timestamp": " 2026-11-30T09:00:00.5+05:30", "ttl": None, "tokens": 2}]  # built: RFC 3339
    decoded, python = _decoded_twice(items)
    built, todo = _scan.records_of(decoded, *_BUILDER)
    assert todo == [1, 2, 3, 4, 5, 6]
    expected = records._decoded_records_python(python)
    assert [built[0], built[7], built[8]] == [expected[0], expected[7], expected[8]]
    assert expected[6] is None and expected[1] is not None  # the todo: Python builds one, refuses the other
    assert built[7].levels[1] == Level("gist", 1, None, None, ("b",)) and built[7].ttl == 3.0
    assert built[8].time_kind == "rfc3339" and built[8].ttl is None and built[8].ttl_given
    assert records._decoded_records([None]) == [None]
    unset = decode.DecodedRecord("a", 1, tokens=2)
    del unset.timestamp  # a field no decoder leaves unset: Python reads it, and raises as getattr does
    assert _scan.records_of([unset], *_BUILDER) == ([None], [0])
    assert _scan.written_keys([unset], decode.DecodedRecord, Level) is None


def test_the_compiled_builder_passes_records_fields_in_records_order() -> None:
    """_scan.records_of calls Record with its fields by position, in this order."""
    assert records.Record.__struct_fields__ == (
        "id", "position", "timestamp", "levels", "tenant", "store", "session", "key", "ttl", "ttl_given",
        "authority", "version", "document", "text", "time_kind", "covers", "score")


# what records._decoded_records gives the compiled builder, besides the decoded items
_BUILDER = (decode.DecodedRecord, Level, records.Record, decode.UNSET, timeutil.parse_timestamp,
            timeutil.TimeValueError, timeutil.RFC3339)


def test_the_fuzz_corpus_loads_the_same_both_ways(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "fuzz"))
    try:
        from fuzz_loaders import SEEDS, mutate
    finally:
        sys.path.pop(0)
    rng = random.Random(13)
    assert all(path.is_file() for path, _, _ in SEEDS)  # the corpus has not gone stale
    seeds = [path.read_bytes() for path, suffix, _ in SEEDS if suffix == ".jsonl"]
    compared = decoded_fast = 0
    for i in range(400):
        data = mutate(rng, seeds[i % len(seeds)])
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        fast, exact = both_from_text(text, tmp_path)
        assert fast == exact, data
        compared += 1
        try:
            decoded_fast += records._decoded(text, jsonl_lines(text)) is not None
        except memsolve.InputError:
            pass
    assert compared > 300 and decoded_fast > 100  # the fast path did take most of them


def test_a_file_the_fast_path_takes_hashes_and_locates_as_before(tmp_path: Path) -> None:
    text = '{"id": "a", "timestamp": 1, "tokens": 3}\n\n{"id": "a", "timestamp": 2, "tokens": 4}\n'
    path = tmp_path / "r.jsonl"
    path.write_text(text)
    assert records._decoded(text, jsonl_lines(text)) is not None  # the fast path is the one tested
    loaded = memsolve.load_records(path)
    assert loaded.sha256 == hashlib.sha256(text.encode()).hexdigest()
    duplicate = loaded.records[1]
    assert isinstance(duplicate, InvalidRecord)
    assert (duplicate.error.location.line, duplicate.error.location.column) == (3, 8)  # at its id
    assert loaded.locate_field(0, "tokens").line == 1


@pytest.mark.parametrize("text", [
    '{"id": "a", "timestamp": 1, "tokens": 3, "tokens": 4}\n',  # the exact path names the duplicate key
    '{"id": "a", "timestamp": 1, "tokens" : 3, "tokens": 4}\n',
    '{"id": "a", "timestamp": 1, "tok\\u0065ns": 3, "tokens": 4}\n',
    '{"id": "a", "timestamp": 1, "metadata": ' + "[" * 70 + "]" * 70 + "}\n",
    '{"id": "a", "timestamp": 1, "tokens": 1, "metadata": {"m": ' + "[" * 100_000 + "]" * 100_000 + "}}\n",
    '{"id": "a", "timestamp": 1, "text": "\\ud800"}\n',
    '{"id": "a", "timestamp": 1, "representations": {"raw": {"tokens": 2, "name": "x"}}}\n',  # a level's own name
    '{"id": "a", "timestamp": 1, "representations": {"raw": {"tokens": 2, "name": ""}}}\n',
    # a string past the limit in a file with nothing else wrong (the string gate alone must refuse it)
    '{"id": "a", "timestamp": 1, "tokens": 1}\n{"id": "b", "timestamp": 1, "tokens": 1, "text": "' + "x" * (2**20 + 1)
    + '"}\n',
])
def test_what_the_fast_path_cannot_vouch_for_gets_the_exact_answer(tmp_path: Path, text: str) -> None:
    fast, exact = both_from_text(text, tmp_path)
    assert fast == exact
    assert fast[0] == "error" or fast[-1][0] == "invalid"  # refused as a file, or the record invalid


@pytest.mark.parametrize("text", [
    # a colon escaped after a quote in a string is written back as `":`: one more, which hid the
    # dropped duplicate from the count (found in review); across lines and on one line
    '{"id":"a","id":"b","timestamp":1,"tokens":1}\n{"id":"c","timestamp":1,"tokens":1,"text":"x\\"\\u003a"}\n',
    '{"id":"a","tenant":"victim","tenant":"attacker","timestamp":1,"tokens":1,"text":"\\"\\u003A"}\n',
])
def test_a_colon_written_as_an_escape_cannot_hide_a_duplicate_key(tmp_path: Path, text: str) -> None:
    fast, exact = both_from_text(text, tmp_path)
    # that line's record is invalid, named by no id and no tenant (which of the two would it be?)
    assert fast == exact and fast[0][:4] == ("invalid", None, 0, None) and "duplicate key" in fast[0][4]
    path = tmp_path / "r.json"
    path.write_text("[" + text.strip().replace("\n", ",") + "]")
    with pytest.raises(memsolve.InputError, match="duplicate key"):
        memsolve.load_records(path)  # the orjson gate of plain JSON shares the check


# --- Python data (and parsed JSON or YAML documents): memsolve.decode.items ----------------------

class _Store(str, enum.Enum):  # formats itself `_Store.A` where a plain str reads `semantic`
    A = "semantic"


class _Plain(enum.Enum):
    A = "semantic"


class _Size(enum.IntEnum):
    A = 5


class _Text(str):
    pass


# what Python data may hold that JSON never gives: each must take the exact path
_python = st.sampled_from([_Store.A, _Plain.A, _Size.A, _Text("t1"), ("a",), {"a"}, frozenset(), np.float64(1.5),
                           np.int64(3), np.str_("s"), Decimal("1.5"), datetime(2026, 11, 30, tzinfo=timezone.utc),
                           date(2026, 11, 30), True, "\ud800", "😀", 2**64, MappingProxyType({"a": 1}),
                           UserDict({"a": 1}), OrderedDict(a=1)])


def _oddly(item: dict[str, Any], data: st.DataObject) -> dict[str, Any]:
    """The record with one value (at its top, in a level or in its covers) swapped for a Python one."""
    where = data.draw(st.sampled_from(["field", "level", "covers", "none", "none"]))
    value = data.draw(_python)
    if where == "field":
        return {**item, data.draw(st.sampled_from(sorted(item) + ["store", "tokens", "metadata"])): value}
    reps = item.get("representations")
    if where == "level" and isinstance(reps, dict) and reps:
        name = sorted(reps)[0]
        spec = reps[name] if isinstance(reps[name], dict) else {}
        return {**item, "representations": {**reps, name: {**spec, data.draw(st.sampled_from(
            ["tokens", "utility", "text", "covers"])): value}}}
    if where == "covers":
        return {**item, "covers": [value]}
    return item


def described_data(data: Any, fast: bool) -> Any:
    doc = records.Document("<records>", "", data, "data")
    try:
        return described(records._build(doc, "", surrogates=True, fast=fast))
    except memsolve.InputError as error:
        return ("error", error.render())


@settings(max_examples=600, deadline=None)
@given(st.lists(_record, max_size=6), st.data())
def test_python_data_fast_path_equals_the_exact_path(items: list[dict[str, Any]], data: st.DataObject) -> None:
    odd = [_oddly(item, data) if isinstance(item, dict) else item for item in items]
    for given_items in (items, odd, {"records": odd, "now": 5}):
        assert described_data(given_items, fast=True) == described_data(given_items, fast=False)
    # the compiled type scan (where built) flags what the Python one flags
    assert decode.plain_records(odd) == decode._plain_records_python(odd)


def test_the_type_scan_is_compiled_and_refuses_what_json_never_gives() -> None:
    """plain_records is _scan.c's where built (CI builds it); both refuse a key that is no exact
    str for a field whose value is not a scalar, a subclass anywhere, a tuple for a list."""
    from memsolve import _scan  # noqa: F401  (ImportError: it did not build, see pip's output)

    base = {"id": "a", "timestamp": 1, "tokens": 2}
    cases = [base, {**base, _Text("metadata"): {"x": 1}}, {**base, "metadata": {"x": ("any", "thing")}},
             {**base, "covers": ["a", _Text("b")]}, {**base, "representations": {_Text("raw"): {"tokens": 1}}},
             {**base, "representations": {"raw": {"covers": ("a",)}}}, [base], None, _Text("x")]
    expected = [True, False, True, False, False, False, False, False, False]
    assert decode._plain_records_python(cases) == expected
    assert decode.plain_records(cases) == expected
    assert decode.plain_records is not decode._plain_records_python or os.environ.get("MEMSOLVE_KERNEL") == "numpy"


def test_python_data_takes_the_fast_path_where_it_can() -> None:
    items = [{"id": f"r{i}", "timestamp": i, "tokens": 3, "utility": 1.5, "store": "semantic"} for i in range(5)]
    assert all(d is not None for d in decode.items(items))
    assert [d is None for d in decode.items([{**items[0], "store": _Store.A}, {**items[1], "covers": ("a",)},
                                             {**items[2], "tokens": np.int64(3)}, items[3]])] == [True] * 3 + [False]
    # metadata that is a mapping but no dict: the exact path's error, and its code never runs here
    odd = {**items[0], "metadata": MappingProxyType({"user": "u1"})}
    assert decode.items([odd]) == [None]
    assert isinstance(memsolve.load_records([odd]).records[0], InvalidRecord)
    assert memsolve.load_records(items).records == memsolve.load_records(items).records


def test_a_refused_line_leaves_the_other_lines_on_the_fast_path() -> None:
    """The key count leaves out the refused line's own `":`; the rest of the text stays fast."""
    text = ('{"id": "a", "timestamp": 1, "tokens": 3}\n{"id": "b", "timestamp": 1, "tokens": "many"}\n'
            '{"id": "c", "timestamp": 2, "tokens": 4}\n')
    decoded = records._decoded(text, jsonl_lines(text))
    assert decoded is not None and [item is None for item in decoded] == [False, True, False]
