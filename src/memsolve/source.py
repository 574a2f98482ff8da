"""Reading input files with line marks.

Every loader in memsolve parses through here, so that any value found wrong later can be
traced back to ``file:line:column`` by its path (``("records", 3, "tokens")``). Locations
are computed only when an error needs one: parsing stays at the speed of the plain parsers.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import yaml

from .compiled import scans
from .errors import InputError, Location

PathT = tuple[Any, ...]

# Input limits: a file past any of them is refused with exit 2 before it can cost memory or time.
MAX_FILE_BYTES = 256 * 1024 * 1024
MAX_DEPTH = 64  # nesting of mappings and lists
MAX_STRING = 1024 * 1024  # characters in one string
MAX_INTEGER = 2**63  # beyond this a number cannot be a token count, a time or a utility
# Larger token counts would overflow the solvers' 64-bit arithmetic once summed.
MAX_TOKENS = 10**12
# Larger utilities would overflow a sum over a million records and leave no resolution for the
# others once scaled to integers (README, "Numbers"); the schema states the same bound.
MAX_UTILITY = 1e15

try:  # the C loader is much faster; fall back to pure Python where libyaml is missing
    _BaseLoader: type = yaml.CSafeLoader  # type: ignore[attr-defined]
except AttributeError:  # pragma: no cover - depends on the PyYAML build
    _BaseLoader = yaml.SafeLoader


def render_path(path: Sequence[Any]) -> str:
    """Render ``("records", 1, "tokens")`` as ``records[1].tokens``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:  # keys are file contents: cut, and printable (a lone surrogate is escaped)
            out += f".{_show(str(part))}" if out else _show(str(part))
    return out


@dataclass
class Document:
    """A parsed input file: its data and a way back from a path to a line."""

    file: str
    text: str
    data: Any
    format: str
    _locator: Callable[[PathT, bool], tuple[int, int] | None] = field(
        repr=False, default=lambda path, key: None
    )

    def locate(self, path: Sequence[Any], key: bool = False) -> Location:
        """Location of the value at ``path`` (of its key, with ``key``), or of the nearest parent."""
        path = tuple(path)
        for cut in range(len(path), -1, -1):
            mark = self._locator(path[:cut], key and cut == len(path))
            if mark is not None:
                return Location(self.file, mark[0], mark[1], render_path(path))
        return Location(self.file, None, None, render_path(path))

    def error(self, path: Sequence[Any], message: str, key: bool = False) -> InputError:
        return InputError(message, self.locate(path, key))


def format_of(path: str | Path) -> str:
    suffix = Path(path).suffix.lower()
    if suffix in (".yaml", ".yml"):
        return "yaml"
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    if suffix == ".json":
        return "json"
    raise InputError(
        f"unknown file type `{suffix or '(none)'}`; expected .json, .jsonl or .yaml",
        Location(str(path)),
    )


_KINDS = (
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _not_regular(mode: int, file: str) -> InputError:
    if stat.S_ISDIR(mode):
        return InputError("is a directory, expected a file", Location(file))
    kind = next((name for test, name in _KINDS if test(mode)), "not a file")
    return InputError(f"not a regular file ({kind})", Location(file))


def read_text(path: str | Path) -> tuple[str, bytes]:
    """Read a file as UTF-8; undecodable bytes are an input error with their line.

    Only regular files (symlinks resolved): a FIFO would block forever and ``/dev/zero`` never
    ends. The file is opened without blocking and checked on its descriptor, and at most
    MAX_FILE_BYTES are read whatever its size said (it may grow while being read).
    """
    file = str(path)
    try:
        mode = os.stat(path).st_mode
        if not stat.S_ISREG(mode):  # refuse before opening: opening a device can have effects
            raise _not_regular(mode, file)
        # O_NONBLOCK: should a FIFO take the file's place meanwhile, opening it cannot block
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
                     | getattr(os, "O_BINARY", 0))
        with os.fdopen(fd, "rb", buffering=0) as handle:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise _not_regular(info.st_mode, file)
            raw = _read_at_most(handle, info.st_size, MAX_FILE_BYTES, file)
    except FileNotFoundError:
        raise InputError("file not found", Location(file)) from None
    except IsADirectoryError:
        raise InputError("is a directory, expected a file", Location(file)) from None
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", Location(file)) from None
    except ValueError:  # a NUL in the path
        raise InputError("cannot read file: the path holds a NUL character", Location(file)) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise InputError(
            f"not valid UTF-8 (byte 0x{raw[exc.start]:02x})", Location(file, line, column)
        ) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return text, raw


def _read_at_most(handle: Any, size: int, limit: int, file: str) -> bytes:
    """The file's bytes, or an error as soon as there are more than ``limit``."""
    if size > limit:
        raise InputError(f"file is {size:,} bytes, more than the limit of {limit:,}", Location(file))
    parts: list[bytes] = []
    total, want = 0, size + 1  # one read for a file that keeps its size; +1 sees that it ends
    while total <= limit:
        chunk = handle.read(min(want, limit + 1 - total))
        if not chunk:
            break
        parts.append(chunk)
        total += len(chunk)
        want = 1 << 20
    if total > limit:
        raise InputError(f"file grew past the limit of {limit:,} bytes while being read", Location(file))
    return b"".join(parts)


STDIN = "-"  # the path that names standard input (``--records -``)


def load_document(path: str | Path, fmt: str | None = None) -> tuple[Document, bytes]:
    """Read and parse a JSON, JSON Lines or YAML file (``-``: standard input, its format told by
    its text); returns the document and raw bytes."""
    if str(path) == STDIN:
        text = read_stream()
        return parse_text(text, "<stdin>", fmt or sniff_format(text)), text.encode("utf-8")
    fmt = fmt or format_of(path)
    text, raw = read_text(path)
    return parse_text(text, str(path), fmt), raw


def read_stream(stream: Any = None) -> str:
    """Standard input (or ``stream``, binary) as UTF-8 text, at most MAX_FILE_BYTES of it."""
    handle = stream if stream is not None else sys.stdin.buffer
    raw = _read_at_most(handle, 0, MAX_FILE_BYTES, "<stdin>")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise InputError(f"not valid UTF-8 (byte 0x{raw[exc.start]:02x})", Location("<stdin>", line, column)) from None
    return text[1:] if text.startswith("\ufeff") else text


def sniff_format(text: str, containers: tuple[str, ...] = ("records", "kind")) -> str:
    """The format of text that came without a file name: one JSON value is JSON, lines that each
    start a JSON object are JSON Lines, anything else is YAML (whose errors then say where).

    One JSON mapping on one line that holds none of ``containers`` (the keys by which a document of
    the kind being read is a mapping: a records case's `records`, a document's `kind`) is JSON
    Lines of one item: what `memsolve import` writes for a one-item export."""
    try:
        value = _json_loads(text)
    except (ValueError, _DuplicateKey, RecursionError):
        pass
    else:
        single = isinstance(value, dict) and "\n" not in text.strip() and not any(key in value for key in containers)
        return "jsonl" if single else "json"
    lines = [line.strip() for line in text.split("\n") if line.strip()]
    if lines and all(line.startswith("{") for line in lines):
        return "jsonl"
    stripped = text.lstrip()
    return "json" if stripped.startswith(("[", "{")) else "yaml"  # JSON's own error, with its line


def parse_text(text: str, file: str, fmt: str) -> Document:
    if fmt == "yaml":
        doc = _parse_yaml(text, file)
        check_structure(doc)
        return doc
    if fmt == "json":
        doc = _parse_json(text, file)
        if may_break_limits(text):
            check_structure(doc)
        return doc
    if fmt == "jsonl":
        return _parse_jsonl(text, file)
    raise ValueError(fmt)


# --- YAML -------------------------------------------------------------------------------


class _StrictLoader(_BaseLoader):  # type: ignore[misc, valid-type]
    """Safe loader that rejects duplicate keys (YAML would silently keep the last)."""


def _construct_mapping(loader: Any, node: yaml.MappingNode, deep: bool = False) -> dict:
    loader.flatten_mapping(node)
    seen: dict[Any, Any] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        try:
            hash(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(
                None, None, "mapping key is not a scalar", key_node.start_mark
            ) from None
        if key in seen:
            raise _DuplicateKey(str(key), key_node.start_mark.line + 1, key_node.start_mark.column + 1)
        seen[key] = True
    return loader.construct_mapping(node, deep=deep)


class _DuplicateKey(Exception):
    def __init__(self, key: str, line: int | None = None, column: int | None = None) -> None:
        super().__init__(key)
        self.key, self.line, self.column = key, line, column


class _Refusal(Exception):
    """A value the YAML constructors refuse, with its 1-based line and column."""

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(message)
        self.message, self.line, self.column = message, line, column


# YAML 1.1 (PyYAML) reads `1e-9` as a string; policy authors mean the number (YAML 1.2, JSON)
_StrictLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."),
)

_StrictLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
    lambda loader, node: _construct_mapping(loader, node, deep=True),
)


def _construct_timestamp(loader: Any, node: yaml.ScalarNode) -> Any:
    """A YAML timestamp; one that names no real instant (month 13, ``:60``) stays text, which the
    time checks then refuse with their reason at the record (where one record can be excluded)."""
    try:
        return loader.construct_yaml_timestamp(node)
    except (ValueError, OverflowError, AttributeError):  # AttributeError: `!!timestamp abc`
        return loader.construct_scalar(node)


def _construct_int(loader: Any, node: yaml.ScalarNode) -> Any:
    """A YAML int; none that Python cannot print (more digits than sys.get_int_max_str_digits, which
    a hexadecimal literal reaches with fewer), and a located error for `!!int abc`."""
    try:
        value = loader.construct_yaml_int(node)
    except ValueError:  # too many digits, or not a number at all
        value = None
    limit = _int_digits_limit()
    if value is not None and not (limit and value.bit_length() > limit * 3.3 and abs(value) >= 10**limit):
        return value
    mark = node.start_mark
    if value is None and not (limit and sum(char.isdigit() for char in node.value) > limit):
        raise _Refusal(f"`{_show(node.value)}` is not an integer", mark.line + 1, mark.column + 1)
    raise _Refusal(_too_many_digits(node.value), mark.line + 1, mark.column + 1)


def _refusing(construct: Callable[[Any, Any], Any], what: str) -> Callable[[Any, Any], Any]:
    """A scalar constructor whose failure (`!!float abc`, `!!bool maybe`) is a located error."""

    def checked(loader: Any, node: yaml.ScalarNode) -> Any:
        try:
            return construct(loader, node)
        except (ValueError, KeyError, OverflowError):
            mark = node.start_mark
            raise _Refusal(f"`{_show(str(node.value))}` is not {what}", mark.line + 1, mark.column + 1) from None

    return checked


_StrictLoader.add_constructor("tag:yaml.org,2002:timestamp", _construct_timestamp)
_StrictLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)
_StrictLoader.add_constructor("tag:yaml.org,2002:float", _refusing(_BaseLoader.construct_yaml_float, "a number"))
_StrictLoader.add_constructor("tag:yaml.org,2002:bool", _refusing(_BaseLoader.construct_yaml_bool, "true or false"))


def _int_digits_limit() -> int:
    """Python's limit on the digits of an int it converts from or to text (0: none; 3.11+)."""
    return sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else 0


def _too_many_digits(number: str) -> str:
    return f"number `{_show(number)}` has more digits than the limit of {_int_digits_limit():,}"


def _parse_yaml(text: str, file: str) -> Document:
    try:
        data = yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except _DuplicateKey as dup:
        raise InputError(f"duplicate key `{_show(dup.key)}`", Location(file, dup.line, dup.column)) from None
    except _Refusal as refusal:
        raise InputError(refusal.message, Location(file, refusal.line, refusal.column)) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "invalid YAML"
        loc = Location(file, mark.line + 1, mark.column + 1) if mark else Location(file)
        raise InputError(f"invalid YAML: {problem}", loc) from None
    except yaml.reader.ReaderError as exc:
        line, column = _line_col(text, min(exc.position, len(text)))
        where = Location(file, line, column)
        char = chr(exc.character) if isinstance(exc.character, int) else exc.character  # libyaml gives a code
        raise InputError(f"invalid YAML: character {char!r} is not allowed", where) from None
    except yaml.YAMLError as exc:
        raise InputError(f"invalid YAML: {exc}", Location(file)) from None
    except RecursionError:
        raise InputError(f"nesting deeper than {MAX_DEPTH} levels", Location(file)) from None

    kept: list[Any] = []  # a small file's node tree, composed once: a policy locates each of its rules

    def locator(path: PathT, key: bool) -> tuple[int, int] | None:
        if kept:
            node = kept[0]
        else:
            try:  # the same (C) loader that parsed it: the pure-Python one disagrees on some tabs
                node = yaml.compose(text, Loader=_BaseLoader)
            except yaml.YAMLError:
                node = None
            if len(text) <= _KEPT_TREE:  # a large file's tree would outlive its one error
                kept.append(node)
        return None if node is None else _yaml_locate(node, path, key)

    return Document(file, text, data, "yaml", locator)


_KEPT_TREE = 1 << 16  # characters of YAML whose node tree a document keeps between lookups


def _yaml_locate(node: Any, path: PathT, key: bool = False) -> tuple[int, int] | None:
    for depth, part in enumerate(path):
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                if key_node.value == str(part):
                    node = key_node if key and depth == len(path) - 1 else value_node
                    break
            else:
                return None
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if part >= len(node.value):
                return None
            node = node.value[part]
        else:
            return None
    if node is None:
        return None
    return node.start_mark.line + 1, node.start_mark.column + 1


# --- JSON -------------------------------------------------------------------------------


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


# NaN/Infinity parse to floats here so that the finite-number check can name their path; one
# decoder for all (json.loads with arguments builds a new one per call: 10,000 JSONL lines)
_DECODER = json.JSONDecoder(object_pairs_hook=_no_duplicates, parse_constant=float)


def _json_loads(text: str) -> Any:
    fast = _fast_loads(text)
    return _DECODER.decode(text) if fast is _UNSURE else fast


_UNSURE = object()
_SPACED_KEY = re.compile(r'"[\n\r][ \t\n\r]*:')  # a key with a line break before its colon
_LONG_DIGITS = re.compile(r"\d{19}")  # an integer that may pass 64 bits, which orjson reads as a float


def _fast_loads(text: str) -> Any:
    """The text parsed by orjson, or _UNSURE when the exact parser must decide.

    orjson is several times faster than the standard decoder with its duplicate-key hook, but it
    keeps the last of duplicate keys, reads integers past 64 bits as floats, and refuses NaN and
    lone surrogates in its own words. Its value is used only when it parses and no key can have
    been written twice: every key ends in `":` (no blanks before the colon, no quote or colon
    written as a \\u escape), and so does every quote before a colon inside a string, which orjson
    writes back the same way; so the text has as many `":` as orjson's own serialisation of what
    it kept exactly when no key was dropped. Anything else goes to the exact parser, which gives
    the same value or the same error as before (tests/test_source.py)."""
    keys = counted_keys(text)
    if keys is None:
        return _UNSURE
    try:
        data = orjson.loads(text)
        written = orjson.dumps(data)
    except (orjson.JSONDecodeError, orjson.JSONEncodeError):  # the encoder's: nesting past its limit
        return _UNSURE
    if keys != quote_colons(written):
        return _UNSURE
    # an integer read as a float is at least 2**63, which orjson writes with an exponent: only
    # then is the text searched for a long run of digits (a slow search, rarely needed)
    if b"e+" in written and _LONG_DIGITS.search(text):
        return _UNSURE
    return data


def _parse_json(text: str, file: str, line_offset: int = 0, depth: int = 0) -> Document:
    # depth: how far down the document this text's value sits (a JSON Lines record: 1)
    data = json_value(text, file, line_offset, depth)

    def locator(path: PathT, key: bool) -> tuple[int, int] | None:
        offset = _json_offset(text, path, key)
        if offset is None:
            return None
        line, column = _line_col(text, offset)
        return line + line_offset, column

    return Document(file, text, data, "json", locator)


def json_value(text: str, file: str, line_offset: int, depth: int) -> Any:
    """The value of a JSON text, or the InputError that says where it is wrong."""
    try:
        return _json_loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg}", Location(file, exc.lineno + line_offset, exc.colno)) from None
    except _DuplicateKey as dup:
        try:
            line, column = _json_duplicate_mark(text, dup.key) or (None, None)
        except RecursionError:  # the duplicate is hundreds of levels down: the nesting is the problem
            raise _too_deep(text, file, line_offset, depth) from None
        if line is not None:
            line += line_offset
        raise InputError(f"duplicate key `{_show(dup.key)}`", Location(file, line, column)) from None
    except RecursionError:  # far deeper than MAX_DEPTH: say where the limit is passed
        raise _too_deep(text, file, line_offset, depth) from None
    except ValueError as exc:  # an integer of more digits than Python converts
        found = _json_long_integer(text)
        if found is None:  # pragma: no cover - no other ValueError is known
            raise InputError(f"invalid JSON: {exc}", Location(file)) from None
        line, column = _line_col(text, found[1])
        raise InputError(_too_many_digits(found[0]), Location(file, line + line_offset, column)) from None


def _parse_jsonl(text: str, file: str) -> Document:
    line_of = jsonl_lines(text)
    records = [json_value(line, file, number - 1, 1) for number, line in line_of]
    doc = jsonl_document(text, file, line_of, records)
    if any(jsonl_line_may_break_limits(line) for _, line in line_of):
        check_structure(doc)
    return doc


class JsonlLines(Sequence[tuple[int, str]]):
    """The lines of a JSON Lines text that are not blank: item ``i`` is the (line number, text) of
    the i-th, ``texts`` their texts. Two lists rather than a pair per line: a million-line file
    would otherwise hold a million tuples the collector walks."""

    __slots__ = ("numbers", "texts")

    def __init__(self, numbers: Sequence[int], texts: list[str]) -> None:
        self.numbers, self.texts = numbers, texts

    def __len__(self) -> int:
        return len(self.texts)

    def __getitem__(self, position: int | slice) -> Any:
        if isinstance(position, slice):
            return list(zip(self.numbers[position], self.texts[position], strict=True))
        return self.numbers[position], self.texts[position]

    def __eq__(self, other: object) -> bool:
        return list(self) == (list(other) if isinstance(other, JsonlLines) else other)

    __hash__ = None  # type: ignore[assignment]


def jsonl_lines(text: str) -> JsonlLines:
    """The (line number, text) of each line of a JSON Lines text that is not blank."""
    # line by line: joining lines into one array would accept a value split across two lines
    # split at \n only: splitlines() also splits at U+2028, U+0085..., which JSON strings may hold
    texts = text.split("\n")
    if not texts[-1].strip():
        texts.pop()  # the end of the last line (or a blank last line): the numbers before it stand
    if all(map(str.strip, texts)):  # no blank line (str.strip returns a line with no blank at its ends as it is)
        return JsonlLines(range(1, len(texts) + 1), texts)
    numbers = [number for number, line in enumerate(texts, start=1) if line.strip()]
    return JsonlLines(numbers, [texts[number - 1] for number in numbers])


def jsonl_document(text: str, file: str, line_of: JsonlLines, data: Any) -> Document:
    """The document of a JSON Lines text (its lines from :func:`jsonl_lines`), holding ``data``."""

    def locator(path: PathT, key: bool) -> tuple[int, int] | None:
        if not path:
            return (1, 1)
        if not isinstance(path[0], int) or path[0] >= len(line_of):
            return None
        number, line = line_of[path[0]]
        offset = _json_offset(line, path[1:], key)
        if offset is None:
            return None
        return number, _line_col(line, offset)[1]

    return Document(file, text, data, "jsonl", locator)


def jsonl_line_may_break_limits(line: str) -> bool:
    """Whether one line of JSON Lines can break MAX_DEPTH or MAX_STRING or hold a lone surrogate:
    its value then takes :func:`check_structure` on its own (each line is one record)."""
    return string_may_break_limit(line) or nesting_may_break_limit(line) or _SURROGATE_ESCAPE.search(line) is not None


def nameable(value: Any) -> bool:
    """Whether a string can name its record in output (an id, a tenant): within MAX_STRING and
    valid Unicode (a lone surrogate cannot be written as UTF-8)."""
    return isinstance(value, str) and _string_problem(value, "string", "") is None


def string_may_break_limit(line: str) -> bool:
    """Whether a line of JSON Lines can hold a string longer than MAX_STRING."""
    return len(line) > MAX_STRING


def nesting_may_break_limit(line: str) -> bool:
    """Whether a line of JSON Lines can nest MAX_DEPTH deep (a record is one level down, so
    MAX_DEPTH brackets, not one more, can break the limit)."""
    return line.count("[") + line.count("{") >= MAX_DEPTH


def counted_keys(text: str, data: bytes | None = None) -> int | None:
    """The `":` a JSON text writes (each key ends in one, as does a quote before a colon inside a
    string), or None where counting them may not tell a key written twice: a key with blanks
    before its colon, or a quote or a colon written as a \\u escape (a string holding `\\"\\u003a`
    is written back as `\\":`, one `":` more, which hides one dropped key): see :func:`_fast_loads`.
    ``data``: the UTF-8 bytes the text was read from, where known (a byte order mark before it
    changes no count)."""
    # what follows each quote, read over the UTF-8 bytes (an ASCII byte there is that character).
    # A blank or tab after a quote is rare outside keys; a line break after one is common in
    # JSON, so a regular expression then looks for a key before its colon.
    colons, blank, line_break, escape = quote_scan(text.encode("utf-8", "surrogatepass") if data is None else data)
    if escape or blank or line_break and _SPACED_KEY.search(text) is not None:
        return None
    return colons


def quote_colons(written: bytes) -> int:
    """The `":` in JSON bytes written back by a serialiser (no blanks: each key ends in one)."""
    return quote_scan(written)[0]


def _quote_scan_numpy(data: bytes) -> tuple[int, bool, bool, bool]:
    """:func:`quote_scan` by numpy, in slices (bounding the arrays on a 256 MiB file): plain
    searches for each pair cost three times as much, a quote being a text's commonest byte."""
    escape = any(sequence in data for sequence in (b"\\u0022", b"\\u003a", b"\\u003A"))
    bytes_ = np.frombuffer(data, dtype=np.uint8)
    colons, blank, line_break = 0, False, False
    for start in range(0, max(len(bytes_) - 1, 0), _GATE_SLICE):
        chunk = bytes_[start:start + _GATE_SLICE + 1]
        after = chunk[np.flatnonzero(chunk[:-1] == 34) + 1]
        colons += int(np.count_nonzero(after == 58))
        blank = blank or bool(((after == 32) | (after == 9)).any())
        line_break = line_break or bool(((after == 10) | (after == 13)).any())
    return colons, blank, line_break, escape


# quote_scan(data) -> (colons, blank, line_break, escape): how many quotes of the bytes a colon
# follows, whether a blank or tab, or a line break, follows one (the last byte counts for nothing),
# and whether a quote or a colon is written as a \\u escape (\\u0022, \\u003a, \\u003A)
quote_scan: Callable[[bytes], tuple[int, bool, bool, bool]] = getattr(scans(), "quote_scan", _quote_scan_numpy)

_GATE_SLICE = 1 << 24  # bytes a slice: bounds the gate's arrays on a 256 MiB file


def may_break_limits(text: str) -> bool:
    """Whether a JSON text can break MAX_DEPTH, MAX_STRING or hold a lone surrogate: a decoded string
    is never longer than the text, and nesting needs one bracket a level. Files that cannot skip
    :func:`check_structure`'s walk over every value."""
    return (
        len(text) > MAX_STRING
        or text.count("[") + text.count("{") > MAX_DEPTH
        or _SURROGATE_ESCAPE.search(text) is not None
    )


# surrogates come out of JSON only through \u escapes (the text itself was decoded as strict UTF-8)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_JSON_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]|-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?')


def _too_deep(text: str, file: str, line_offset: int, depth: int) -> InputError:
    line, column = _json_deep_mark(text, depth) or (None, None)
    if line is not None:
        line += line_offset
    return InputError(f"nesting deeper than {MAX_DEPTH} levels", Location(file, line, column))


def _json_deep_mark(text: str, depth: int = 0) -> tuple[int, int] | None:
    """Line and column of the bracket whose value is nested MAX_DEPTH deep in the document (the
    text's own value being ``depth`` down), found by a scan without recursion."""
    for match in _JSON_TOKEN.finditer(text):
        char = text[match.start()]
        if char in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return _line_col(text, match.start())
        elif char in "]}":
            depth -= 1
    return None


def _json_long_integer(text: str) -> tuple[str, int] | None:
    """The first integer (outside strings) too long for ``int()``, and its offset."""
    limit = _int_digits_limit()
    for match in _JSON_TOKEN.finditer(text):
        token = match.group()
        if token[0] in "-0123456789" and token.lstrip("-").isdigit() and len(token.lstrip("-")) > limit:
            return token, match.start()
    return None


def _show(text: str) -> str:
    """A user value for a message: lone surrogates escaped (they cannot be printed), cut to 40 characters."""
    text = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return text if len(text) <= 40 else text[:37] + "..."


def _line_col(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


_WS = re.compile(r"[ \t\n\r]*")
_SCALAR = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null|NaN|-?Infinity")


def _json_events(text: str) -> Iterator[tuple[PathT, int, str | None]]:
    """Walk valid JSON text, yielding (path, offset, key): a value when key is None, else a member's key."""

    def skip(pos: int) -> int:
        return _WS.match(text, pos).end()  # type: ignore[union-attr]

    def walk(pos: int, path: PathT) -> Iterator[tuple[PathT, int, str | None] | int]:
        # yields events, and finally the offset just past this value
        pos = skip(pos)
        yield path, pos, None
        char = text[pos : pos + 1]
        if char == "{":
            pos = skip(pos + 1)
            while text[pos] != "}":
                key, end = json.decoder.scanstring(text, pos + 1)  # type: ignore[attr-defined]
                yield path + (key,), pos, key
                pos = yield from _events_then_end(walk(skip(end) + 1, path + (key,)))
                pos = skip(pos)
                if text[pos] == ",":
                    pos = skip(pos + 1)
            yield pos + 1
        elif char == "[":
            pos, index = skip(pos + 1), 0
            while text[pos] != "]":
                pos = yield from _events_then_end(walk(pos, path + (index,)))
                pos, index = skip(pos), index + 1
                if text[pos] == ",":
                    pos = skip(pos + 1)
            yield pos + 1
        elif char == '"':
            yield json.decoder.scanstring(text, pos + 1)[1]  # type: ignore[attr-defined]
        else:
            match = _SCALAR.match(text, pos)
            yield match.end() if match else pos + 1

    def _events_then_end(gen: Iterator[Any]) -> Any:
        end = 0
        for item in gen:
            if isinstance(item, int):
                end = item
            else:
                yield item
        return end

    yield from _events_then_end(walk(0, ()))


def _json_offset(text: str, path: PathT, key: bool = False) -> int | None:
    for event_path, offset, event_key in _json_events(text):
        if event_path == path and (event_key is not None) == (key and bool(path)):
            return offset
    return None


def _json_duplicate_mark(text: str, key: str) -> tuple[int, int] | None:
    seen: set[PathT] = set()
    for event_path, offset, event_key in _json_events(text):
        if event_key is not None and event_key == key:
            if event_path in seen:
                return _line_col(text, offset)
            seen.add(event_path)
    return None


def check_structure(doc: Document, data: Any = None, here: PathT = ()) -> None:
    """Refuse aliases (shared nodes: a billion-laughs file), deep nesting, huge strings and lone
    surrogates (a JSON ``"\\ud800"``: text that cannot be written back as UTF-8); in the whole
    document, or in ``data`` found at ``here`` in it (one line of JSON Lines).

    Walks each distinct node once, so a file of ten nested aliases is refused in microseconds
    instead of being expanded. JSON cannot share nodes; YAML gives aliases as shared objects.
    A first walk only looks (level by level, no paths); a second one, on a document that breaks
    a limit, finds where. JSON texts that cannot break a limit (see ``may_break_limits``; JSON
    Lines: checked line by line) skip both.
    """
    root = doc.data if not here else data
    if _within_limits(root, len(here)):
        return
    seen: set[int] = set()
    stack: list[tuple[PathT, Any, bool]] = [(tuple(here), root, False)]  # (path, value, is a key)
    while stack:
        here, value, is_key = stack.pop()
        if isinstance(value, (dict, list)):
            if id(value) in seen:
                raise doc.error(here, "YAML aliases (*name) are not allowed in memsolve inputs")
            seen.add(id(value))
            if len(here) >= MAX_DEPTH:
                raise doc.error(here, f"nesting deeper than {MAX_DEPTH} levels")
            stack.extend(reversed(_entries(here, value)))  # the first problem in document order
        else:
            problem = _string_problem(value, "key" if is_key else "string", doc.format)
            if problem:
                raise doc.error(here, problem, key=is_key)


def refuse_lone_surrogates(doc: Document, data: Any, here: PathT = ()) -> None:
    """Raise at the first string or key of Python ``data`` (at ``here`` in ``doc``) holding a lone
    surrogate (text that cannot be written as UTF-8: a result or a state naming it could not be
    stored). Shared objects are fine in Python data; each is looked at once."""
    seen: set[int] = set()
    stack: list[tuple[PathT, Any, bool]] = [(here, data, False)]
    while stack:
        here, value, is_key = stack.pop()
        if isinstance(value, (Mapping, list, tuple)):
            if id(value) not in seen:
                seen.add(id(value))
                stack.extend(reversed(_entries(here, value)))  # the first problem in the data's order
        elif isinstance(value, str):
            problem = _lone_surrogate(value, "key" if is_key else "string", "text")
            if problem:
                raise doc.error(here, problem, key=is_key)


def _entries(here: PathT, value: Any) -> list[tuple[PathT, Any, bool]]:
    """(path, value, is a key) of a mapping's keys and values, or of a list's items, in order."""
    if isinstance(value, Mapping):
        return [e for k, v in value.items() for e in ((here + (k,), k, True), (here + (k,), v, False))]
    return [(here + (i,), v, False) for i, v in enumerate(value)]


def _string_problem(value: Any, what: str, fmt: str) -> str | None:
    if not isinstance(value, str):
        return None
    if len(value) > MAX_STRING:
        return f"{what} of {len(value):,} characters, more than the limit of {MAX_STRING:,}"
    return _lone_surrogate(value, what, "YAML text" if fmt == "yaml" else "JSON text")


def _lone_surrogate(value: str, what: str, text: str) -> str | None:
    lone = None if value.isascii() else _SURROGATE.search(value)
    if lone is None:
        return None
    return f"lone surrogate `\\u{ord(lone.group()):04x}` in a {what}; {text} must be valid Unicode"


def _within_limits(data: Any, depth: int = 0) -> bool:
    """Whether ``data`` (``depth`` levels down its document) has no shared node, nothing nested
    MAX_DEPTH deep, no string longer than MAX_STRING and no lone surrogate: :func:`check_structure`'s
    rules, without paths, level by level (the parsers build plain dicts, lists and strs: exact type
    tests are the fast ones)."""
    if type(data) is not dict and type(data) is not list:
        return _string_problem(data, "string", "") is None
    limit = MAX_STRING
    level, seen = [data], {id(data)}
    while level:
        if depth >= MAX_DEPTH:
            return False
        below: list[Any] = []
        push = below.append
        for value in level:
            if type(value) is dict:
                for key in value:
                    if type(key) is str and (len(key) > limit or not key.isascii() and _SURROGATE.search(key)):
                        return False
                value = value.values()
            for item in value:
                kind = type(item)
                if kind is str:
                    if len(item) > limit or not item.isascii() and _SURROGATE.search(item):
                        return False
                elif kind is dict or kind is list:
                    push(item)
        ids = set(map(id, below))
        if len(ids) < len(below) or not ids.isdisjoint(seen):  # a node reached twice: an alias
            return False
        seen |= ids
        level, depth = below, depth + 1
    return True


def find_non_finite(data: Any, path: PathT = ()) -> tuple[PathT, float] | None:
    """Path of the first NaN, infinite or out-of-range number in ``data``, if any."""
    stack: list[tuple[PathT, Any]] = [(path, data)]
    while stack:
        here, value = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            return here, value
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INTEGER:
            return here, float("inf")
        if isinstance(value, dict):
            stack.extend(reversed([(here + (k,), v) for k, v in value.items()]))
        elif isinstance(value, list):
            stack.extend(reversed([(here + (i,), v) for i, v in enumerate(value)]))
    return None
