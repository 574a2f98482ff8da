"""Reading input files: hostile input (aliases, deep nesting, huge files, numbers and strings)
is refused fast with one located error."""

from __future__ import annotations

import json
import os
import re
import threading
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

import memsolve
from memsolve import records, source
from memsolve.records import InvalidRecord

from .conftest import needs, write

HEAD = "apiVersion: memsolve/v1\nkind: MemoryPolicy\nmetadata: {name: x}\n"


def _billion_laughs(head: str) -> str:
    lines = [head.rstrip("\n"), 'a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 10)]
    return "\n".join(lines) + "\n"


def test_billion_laughs_policy_fails_fast(cli, tmp_path: Path) -> None:
    path = write(tmp_path, "p.yaml", _billion_laughs(HEAD))
    start = time.perf_counter()
    result = cli("validate", path)
    assert result.exit_code == 2 and "aliases" in result.stderr
    assert time.perf_counter() - start < 2.0


def test_billion_laughs_records_fail_fast(tmp_path: Path) -> None:
    path = write(tmp_path, "r.yaml", "records: &r [{id: a, timestamp: 0, tokens: 1, utility: 1}]\nagain: *r\n")
    with pytest.raises(memsolve.InputError, match="aliases"):
        memsolve.load_records(path)


@pytest.mark.parametrize("name, text", [
    ("deep.json", "[" * 5000 + "]" * 5000),
    ("deep.yaml", "records: " + "[" * 5000 + "]" * 5000 + "\n"),
    ("deep2.yaml", "records:\n" + "".join("  " * i + "- \n" for i in range(100))),
])
def test_deep_nesting_is_refused(tmp_path: Path, name: str, text: str) -> None:
    with pytest.raises(memsolve.InputError, match="nest"):
        memsolve.load_records(write(tmp_path, name, text))


def test_numbers_beyond_the_solver_range(tmp_path: Path, cli) -> None:
    path = write(tmp_path, "r.json", '[{"id": "a", "timestamp": 0, "tokens": 1, "utility": 1' + "0" * 400 + "}]")
    bad = memsolve.load_records(path).invalid[0].error
    assert bad.path == "[0].utility" and "2**63" in bad.message
    huge = write(tmp_path, "b.json", {"records": [], "budget": 10**15, "now": 0})
    result = cli("--policy", "policies/ch15.yaml", "--records", huge)
    assert result.exit_code == 2 and "budget" in result.stderr
    assert cli("--policy", "policies/ch15.yaml", "--records", huge, "--budget", str(10**13)).exit_code == 2


def test_size_count_and_string_limits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, "r.json", [{"id": f"r{i}", "timestamp": 0, "tokens": 1, "utility": 1} for i in range(5)])
    monkeypatch.setattr(source, "MAX_FILE_BYTES", 10)
    with pytest.raises(memsolve.InputError, match="more than the limit"):
        memsolve.load_records(path)
    monkeypatch.setattr(source, "MAX_FILE_BYTES", 10**6)
    monkeypatch.setattr(records, "MAX_RECORDS", 4)
    with pytest.raises(memsolve.InputError, match="5 records, more than the limit of 4"):
        memsolve.load_records(path)
    monkeypatch.setattr(source, "MAX_STRING", 3)
    with pytest.raises(memsolve.InputError, match="string of"):
        memsolve.load_records(write(tmp_path, "s.yaml", "- {id: abcdef, timestamp: 0, tokens: 1, utility: 1}\n"))


def test_control_characters_in_yaml_are_one_line_errors(tmp_path: Path, cli) -> None:
    # found by atheris: libyaml's reader error spans two lines
    path = tmp_path / "p.yaml"
    path.write_bytes(HEAD.encode() + b"\n\x00\x00\x00\x00\x00")
    result = cli("validate", path)
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert result.stderr == f"error: {path}:5:1: invalid YAML: character '\\x00' is not allowed\n"


# --- lone surrogates ----------------------------------------------------------------------


@pytest.mark.parametrize("name, text, where, escape", [
    ("v.json", '[{"id": "a", "timestamp": 0, "text": "ok \\ud800 ok"}]', (1, 38, "[0].text"), "\\ud800"),
    ("k.json", '{"records": [\n  {"id": "a", "timestamp": 0,\n   "metadata": {"k\\uDC00": 1}}]}',
     (3, 17, "records[0].metadata.k\\udc00"), "\\udc00"),
    ("l.jsonl", '{"id": "a", "timestamp": 0}\n\n{"id": "b", "timestamp": 0, "text": "\\udbff"}\n',
     (3, 37, "[1].text"), "\\udbff"),
    ("id.jsonl", '{"id": "\\ud83d", "timestamp": 0}\n', (1, 8, "[0].id"), "\\ud83d"),  # half an emoji
    ("t.json", '[{"id": "a", "timestamp": "\\udfff"}]', (1, 27, "[0].timestamp"), "\\udfff"),
])
def test_lone_surrogates_are_refused_where_they_are(tmp_path: Path, name: str, text: str, where, escape) -> None:
    error = load_error(write(tmp_path, name, text))
    assert (error.line, error.column, error.path) == where
    assert error.message.startswith(f"lone surrogate `{escape}` in a ")
    assert error.message.endswith("; JSON text must be valid Unicode")
    str(error).encode("utf-8")  # printable: the message never carries the surrogate itself


def test_lone_surrogate_through_the_cli_is_one_printable_line(cli, tmp_path: Path) -> None:
    path = write(tmp_path, "r.jsonl", '{"id": "a", "tenant": "team-a", "timestamp": 1, "text": "\\ud800"}\n')
    result = cli("--policy", "policies/team-a.yaml", "--records", path)
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert result.stderr == (
        f"error: {path}:1:57: [0].text: lone surrogate `\\ud800` in a string; JSON text must be valid Unicode\n"
    )


def test_surrogate_pairs_and_escaped_backslashes_are_fine(tmp_path: Path) -> None:
    # a pair is one character (U+1F600); `\\ud800` is a backslash and the text `ud800`, not an escape
    text = '[{"id": "a", "timestamp": 0, "text": "\\ud83d\\ude00 and \\\\ud800"}]'
    [record] = memsolve.load_records(write(tmp_path, "r.json", text)).valid
    assert record.text == "\U0001f600 and \\ud800"
    record.text.encode("utf-8")


def test_duplicate_key_with_a_surrogate_is_printable(tmp_path: Path) -> None:
    with pytest.raises(memsolve.InputError, match=r"duplicate key `\\ud800`") as caught:
        memsolve.load_records(write(tmp_path, "r.json", '{"\\ud800": 1, "\\ud800": 2}'))
    str(caught.value).encode("utf-8")


def test_yaml_surrogate_escapes_are_refused(tmp_path: Path) -> None:
    # libyaml refuses the escape itself; the pure-Python loader builds the surrogate, which the
    # structure check then refuses the same way as in JSON
    with pytest.raises(memsolve.InputError, match="invalid Unicode|lone surrogate") as caught:
        memsolve.load_records(write(tmp_path, "r.yaml", '- {id: a, timestamp: 0, text: "\\ud800"}\n'))
    assert caught.value.line == 1
    text = '- {id: a, timestamp: 0, text: "\\ud800"}\n'
    doc = source.Document("r.yaml", text, yaml.load(text, Loader=yaml.SafeLoader), "yaml")  # noqa: S506
    with pytest.raises(memsolve.InputError, match=r"lone surrogate `\\ud800` in a string; YAML text"):
        source.check_structure(doc)
    key = source.Document("r.yaml", "", [{"\udfff": 1}], "yaml")
    with pytest.raises(memsolve.InputError, match="in a key"):
        source.check_structure(key)


# --- files that are not regular files -----------------------------------------------------


def _within(seconds: float, call):
    """Run ``call`` in a thread; a regression that blocks fails the test instead of hanging the suite."""
    out: dict[str, object] = {}

    def run() -> None:
        try:
            out["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            out["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still blocked after {seconds} s"
    if "error" in out:
        raise out["error"]  # type: ignore[misc]
    return out.get("value")


@needs(hasattr(os, "mkfifo"), "FIFOs")
def test_a_fifo_is_refused_at_once(tmp_path: Path, cli) -> None:
    fifo = tmp_path / "r.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(memsolve.InputError, match=r"not a regular file \(a named pipe\)"):
        _within(5, lambda: memsolve.load_records(fifo))
    result = cli("--policy", "policies/team-a.yaml", "--records", fifo)  # CliRunner wants the main thread
    assert result.exit_code == 2 and result.stderr == f"error: {fifo}: not a regular file (a named pipe)\n"
    link = tmp_path / "p.yaml"
    link.symlink_to(fifo)
    with pytest.raises(memsolve.InputError, match="named pipe"):
        _within(5, lambda: memsolve.load_policy(link))


@needs(os.path.exists("/dev/zero"), "/dev devices")
@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom", "/dev/null"])
def test_devices_are_refused_even_behind_a_symlink(tmp_path: Path, device: str) -> None:
    with pytest.raises(memsolve.InputError, match=r"not a regular file \(a character device\)"):
        _within(5, lambda: source.read_text(device))
    link = tmp_path / "r.json"
    link.symlink_to(device)
    with pytest.raises(memsolve.InputError, match="not a regular file") as caught:
        _within(5, lambda: memsolve.load_records(link))
    assert caught.value.file == str(link)


def test_a_folder_and_a_dangling_link(tmp_path: Path) -> None:
    folder = tmp_path / "r.json"
    folder.mkdir()
    with pytest.raises(memsolve.InputError, match="is a directory"):
        memsolve.load_records(folder)
    dangling = tmp_path / "d.json"
    dangling.symlink_to(tmp_path / "missing.json")
    with pytest.raises(memsolve.InputError, match="file not found"):
        memsolve.load_records(dangling)


def test_a_file_larger_than_its_size_said_is_cut_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a file that grows between fstat and read: fstat says 10 bytes, the file has 5,000
    path = write(tmp_path, "r.json", json.dumps([{"id": f"r{i}", "timestamp": 0, "tokens": 1} for i in range(200)]))
    real = os.fstat

    def small(fd: int) -> os.stat_result:
        info = list(real(fd))
        info[6] = 10  # st_size
        return os.stat_result(info)

    monkeypatch.setattr(os, "fstat", small)
    monkeypatch.setattr(source, "MAX_FILE_BYTES", 1000)
    with pytest.raises(memsolve.InputError, match="grew past the limit of 1,000 bytes"):
        memsolve.load_records(path)
    monkeypatch.setattr(source, "MAX_FILE_BYTES", 10**6)
    assert len(memsolve.load_records(path).valid) == 200  # read whole although fstat said 10


@needs(os.path.exists("/proc/self/status"), "/proc")
def test_files_reporting_size_zero_are_still_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    text, _ = source.read_text("/proc/self/status")  # a regular file of size 0 with content
    assert "Name:" in text
    monkeypatch.setattr(source, "MAX_FILE_BYTES", 20)
    with pytest.raises(memsolve.InputError, match="grew past the limit of 20 bytes"):
        source.read_text("/proc/self/status")


# --- the documented limits hold for JSON and JSON Lines too ------------------------------


def load_error(path: Path) -> memsolve.InputError:
    """The input error loading ``path`` gives: raised for a JSON or YAML file, or in JSON Lines,
    where each line is one record, the error of the last invalid record (the line under test)."""
    try:
        loaded = memsolve.load_records(path)
    except memsolve.InputError as raised:
        assert path.suffix != ".jsonl", raised
        return raised
    invalid = [r for r in loaded.records if isinstance(r, InvalidRecord)]
    assert path.suffix == ".jsonl" and invalid, loaded.records
    return invalid[-1].error


def _nested(levels: int) -> str:
    return "[" * levels + "]" * levels


@pytest.mark.parametrize("name, text, line", [
    ("r.json", '[{"id": "a", "timestamp": 0, "metadata": {"x": ' + _nested(200) + "}}]", 1),
    ("r.jsonl", '{"id": "a", "timestamp": 0}\n{"id": "b", "timestamp": 0, "metadata": {"x": '
     + _nested(200) + "}}\n", 2),
    ("r2.json", json.dumps({"records": [{"id": "a", "timestamp": 0, "metadata": {"x": json.loads(_nested(100))}}]},
                           indent=1), None),
])
def test_json_nesting_limit(tmp_path: Path, name: str, text: str, line: int | None) -> None:
    error = load_error(write(tmp_path, name, text))
    assert re.fullmatch(f".*: nesting deeper than {source.MAX_DEPTH} levels", str(error))
    assert error.column is not None and error.path.count("[0]") >= source.MAX_DEPTH - 3
    if line is not None:
        assert error.line == line


@pytest.mark.parametrize("name, text, where", [
    ("r.json", '{"records":\n ' + _nested(5000) + "}", (2, 65)),  # past Python's recursion limit
    ("r.jsonl", '{"id": "a", "timestamp": 0}\n' + _nested(5000) + "\n", (2, 64)),  # a record is one level down
    ("s.jsonl", '{"id": "a", "timestamp": 0}\n{"t": "[[[[[[[[[[", "x": ' + _nested(5000) + "}\n", (2, 88)),
    ("d.json", "[" * 900 + '{"a": 1, "a": 2}' + "]" * 900, (1, 65)),  # a duplicate key deep down
])
def test_json_far_too_deep_is_located(tmp_path: Path, name: str, text: str, where) -> None:
    error = load_error(write(tmp_path, name, text))
    assert f"nesting deeper than {source.MAX_DEPTH} levels" in error.message
    assert (error.line, error.column) == where


def test_nesting_just_within_the_limit_is_fine(tmp_path: Path) -> None:
    # records are one level down: a record's metadata may hold MAX_DEPTH - 3 more lists
    inner = json.loads(_nested(source.MAX_DEPTH - 3))
    good = {"id": "a", "timestamp": 0, "tokens": 1, "utility": 1, "metadata": {"x": inner}}
    for name, text in (("r.jsonl", json.dumps(good) + "\n"), ("r.json", json.dumps([good]))):
        assert len(memsolve.load_records(write(tmp_path, name, text)).valid) == 1
    bad = {**good, "metadata": {"x": [inner]}}
    for name, text in (("b.jsonl", json.dumps(bad) + "\n"), ("b.json", json.dumps([bad]))):
        assert "nesting deeper" in load_error(write(tmp_path, name, text)).message


@pytest.mark.parametrize("name", ["r.json", "r.jsonl"])
def test_json_string_limit(tmp_path: Path, name: str, cli) -> None:
    record = {"id": "a", "tenant": "team-a", "timestamp": 0, "text": "x" * 5_000_000}
    text = json.dumps([record]) if name.endswith(".json") else json.dumps({"id": "z", "timestamp": 0}) + "\n" + \
        json.dumps(record) + "\n"
    path = write(tmp_path, name, text)
    error = load_error(path)
    assert error.message == "string of 5,000,000 characters, more than the limit of 1,048,576"
    assert error.path in ("[0].text", "[1].text") and error.column is not None
    result = cli("--policy", "policies/team-a.yaml", "--records", path)
    assert result.exit_code == 2 and result.stderr.count("\n") == 1 and len(result.stderr) < 300


def test_json_key_limit_and_keys_in_messages_are_cut(tmp_path: Path) -> None:
    key = "k" * 2_000_000
    path = write(tmp_path, "r.jsonl", json.dumps({"id": "a", "timestamp": 0, "metadata": {key: 1}}) + "\n")
    error = load_error(path)
    assert "key of 2,000,000 characters" in error.message
    assert error.path == "[0].metadata." + "k" * 37 + "..." and len(str(error)) < 300
    dup = write(tmp_path, "d.json", '[{"' + "q" * 100 + '": 1, "' + "q" * 100 + '": 2}]')
    with pytest.raises(memsolve.InputError, match=r"duplicate key `q{37}\.\.\.`$"):
        memsolve.load_records(dup)


def test_the_limits_follow_the_module_values(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(source, "MAX_STRING", 9)
    path = write(tmp_path, "r.jsonl", '{"id": "a", "timestamp": 0}\n{"id": "abcdefghij", "timestamp": 0}\n')
    error = load_error(path)
    assert error.message == "string of 10 characters, more than the limit of 9"
    assert (error.line, error.path) == (2, "[1].id")
    monkeypatch.setattr(source, "MAX_STRING", 1024)
    monkeypatch.setattr(source, "MAX_DEPTH", 3)
    with pytest.raises(memsolve.InputError, match="nesting deeper than 3 levels"):
        memsolve.load_records(write(tmp_path, "r.json", '[{"id": "a", "timestamp": 0, "metadata": {"x": [1]}}]'))


@pytest.mark.parametrize("name, text, where", [
    ("r.json", '[{"id": "a", "timestamp": 0, "tokens": ' + "1" * 5000 + "}]", (1, 40)),
    ("r.jsonl", '{"id": "a", "timestamp": 0}\n{"text": "' + "2" * 5000 + '", "tokens": -' + "1" * 5000 + "}\n",
     (2, 5024)),
    ("r.yaml", "- {id: a, timestamp: 0, tokens: " + "1" * 5000 + "}\n", (1, 33)),
    ("h.yaml", "- {id: a, timestamp: 0,\n   tokens: 0x" + "f" * 3600 + "}\n", (2, 12)),  # 4,335 decimal digits
])
def test_integers_python_will_not_convert_are_one_located_error(tmp_path: Path, name: str, text: str, where) -> None:
    # int() and str() refuse more than 4,300 digits with a ValueError: it used to escape as a traceback
    error = load_error(write(tmp_path, name, text))
    assert re.fullmatch(r".*: number `[-0-9a-fx]{37}\.\.\.` has more digits than the limit of [0-9,]+", str(error))
    assert (error.line, error.column) == where


@pytest.mark.parametrize("value, message", [
    ("!!int abc", "`abc` is not an integer"),
    ("!!float abc", "`abc` is not a number"),
    ("!!bool maybe", "`maybe` is not true or false"),
])
def test_yaml_tagged_scalars_that_do_not_parse(tmp_path: Path, value: str, message: str) -> None:
    # PyYAML's constructors raise ValueError / KeyError here: it used to escape as a traceback
    path = write(tmp_path, "p.yaml", HEAD + f"budget: {{tokens: {value}}}\n")
    with pytest.raises(memsolve.InputError) as caught:
        memsolve.load_policy(path)
    assert (caught.value.line, caught.value.column, caught.value.message) == (4, 18, message)


def test_yaml_explicit_timestamp_tag_on_text_is_refused_by_the_time_checks(tmp_path: Path) -> None:
    path = write(tmp_path, "r.yaml", "- {id: a, timestamp: !!timestamp soon, tokens: 1}\n")
    [bad] = memsolve.load_records(path).invalid
    assert bad.error.path == "[0].timestamp" and "`soon`" in bad.error.message


def test_jsonl_lines_end_at_newline_only(tmp_path: Path) -> None:
    # JSON strings may hold U+2028, U+2029 and U+0085 unescaped; str.splitlines() split records there
    texts = ["a\u2028b", "c\u2029d", "e\x85f"]
    lines = [json.dumps({"id": f"r{i}", "timestamp": 0, "text": t}, ensure_ascii=False) for i, t in enumerate(texts)]
    records = memsolve.load_records(write(tmp_path, "r.jsonl", "\r\n".join(lines) + "\r\n"))
    assert [r.text for r in records.records] == texts
    bad = write(tmp_path, "b.jsonl", lines[0] + "\n" + lines[1] + "\n{oops}\n")
    assert load_error(bad).line == 3


# --- the fast JSON path (orjson) and the exact parser ---------------------------------------

_KEYS = st.sampled_from(["a", "b", "id", 'q"', "\\", "é", "\u2028"])
_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False),
                     st.text(max_size=4), st.sampled_from(['x":', '"', "\ud83d\ude00"]))
_VALUES = st.recursive(_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.lists(st.tuples(_KEYS, inner), max_size=3)), max_leaves=8)


def _write_json(value, draw) -> str:
    """JSON text for ``value`` (lists of pairs are objects, with their duplicates), written in
    one of several styles: blanks around colons, escaped quotes, \\u escapes, NaN, long numbers."""
    if isinstance(value, list) and value and all(isinstance(v, tuple) for v in value):
        colon = draw(st.sampled_from([":", ": ", " :", "\t:\n"]))
        parts = [_write_key(k, draw) + colon + _write_json(v, draw) for k, v in value]
        return "{" + draw(st.sampled_from([",", ", "])).join(parts) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_write_json(v, draw) for v in value) + "]"
    if isinstance(value, float) and draw(st.integers(0, 9)) == 0:
        return draw(st.sampled_from(["NaN", "Infinity", "-Infinity", "1e400", "-0.0"]))
    return json.dumps(value, ensure_ascii=draw(st.booleans()))


def _write_key(key: str, draw) -> str:
    if key == 'q"' and draw(st.booleans()):
        return '"q\\u0022"'
    return json.dumps(key, ensure_ascii=draw(st.booleans()))


@st.composite
def _json_texts(draw) -> str:
    text = _write_json(draw(_VALUES), draw)
    return draw(st.sampled_from([text, text + " ", "[" + text + "]", text[:-1] if len(text) > 1 else text]))


def _parse(text: str):
    try:
        return ("ok", source._parse_json(text, "f.json").data)
    except memsolve.InputError as exc:
        return ("error", str(exc))


@settings(max_examples=1500, deadline=None)
@given(_json_texts())
def test_the_fast_json_path_gives_what_the_exact_parser_gives(text: str) -> None:
    """orjson's value is used only when no key can have been dropped: on texts with duplicate
    keys (also hidden behind blanks or \\u0022), NaN, long integers, surrogates and cut texts the
    result, or the error and its location, is the exact parser's."""
    fast = _parse(text)
    exact_only = pytest.MonkeyPatch()
    exact_only.setattr(source, "_fast_loads", lambda text: source._UNSURE)
    try:
        exact = _parse(text)
    finally:
        exact_only.undo()
    assert repr(fast) == repr(exact)  # repr: NaN and -0.0 compare as written


def test_the_fast_json_path_is_taken_for_plain_records() -> None:
    text = json.dumps({"id": "a", "representations": {"raw": {"tokens": 1, "text": 'say "x": y'}}})
    assert source._fast_loads(text) == json.loads(text)
    assert source._fast_loads('{"a": 1, "a": 2}') is source._UNSURE
    assert source._fast_loads('{"a": 1, "a"  : 2}') is source._UNSURE


_SPACED = re.compile(r'"[\n\r][ \t\n\r]*:')


def _plain_searches(text: str) -> bool:
    """The gate as five plain searches (the way it was written before numpy read it)."""
    return ("\\u0022" in text or "\\u003a" in text or "\\u003A" in text or '" ' in text or '"\t' in text
            or ('"\n' in text or '"\r' in text) and _SPACED.search(text) is not None)


@settings(max_examples=1500, deadline=None)
@given(st.text(alphabet=st.sampled_from(['"', " ", "\t", "\n", "\r", ":", "\\", "u", "0", "2", "3", "a", "A",
                                         "é", "😀", "x", "{", "}"]), max_size=40),
       st.sampled_from([1, 2, 3, 7, 1 << 24]))
def test_the_duplicate_key_gate_reads_what_plain_searches_read(text: str, slice_size: int) -> None:
    """counted_keys: None exactly where the plain searches see a key that counting cannot tell,
    else the `":` the text holds, as str.count counts them; quote_colons counts the same in bytes."""
    before = source._GATE_SLICE
    source._GATE_SLICE = slice_size  # slice boundaries fall everywhere in short texts
    try:
        keys = source.counted_keys(text)
        assert (keys is None) == _plain_searches(text)
        assert keys is None or keys == text.count('":')
        data = text.encode("utf-8", "surrogatepass")
        assert source.quote_colons(data) == text.count('":')
        assert source.quote_scan(data) == source._quote_scan_numpy(data)  # compiled (where built) and numpy
    finally:
        source._GATE_SLICE = before


def test_the_byte_scan_is_compiled() -> None:
    """pip builds _scan.c wherever a C compiler exists (CI has one); a silent numpy fallback would hide it."""
    from memsolve import _scan  # noqa: F401  (ImportError: it did not build, see pip's output)

    assert source.quote_scan is not source._quote_scan_numpy or os.environ.get("MEMSOLVE_KERNEL") == "numpy"


@given(st.lists(st.sampled_from(["{}", "", " ", "\t", "\u2028", "\u00a0", "x", " {} ", "\r"]), max_size=8))
def test_jsonl_lines_are_the_numbered_lines_that_are_not_blank(pieces: list[str]) -> None:
    text = "\n".join(pieces)
    expected = [(number, line) for number, line in enumerate(text.split("\n"), start=1) if line.strip()]
    assert source.jsonl_lines(text) == expected
    assert source.jsonl_lines(text + "\n") == expected
    assert source.jsonl_lines(text)[1:] == expected[1:] and list(source.jsonl_lines(text)) == expected


@given(st.integers(0, 800), st.integers(0, 800), st.sampled_from([b":", b" ", b"\n", b"x"]))
def test_the_quote_scan_counts_across_its_blocks(length: int, at: int, after: bytes) -> None:
    """_scan.c counts in blocks of 255 bytes: a quote and what follows it may straddle two."""
    data = bytearray(b"a" * length)
    if at + 1 < length:
        data[at:at + 2] = b'"' + after
    data = bytes(data)
    assert source.quote_scan(data) == source._quote_scan_numpy(data)
    assert source.quote_scan(data)[0] == data.count(b'":')
