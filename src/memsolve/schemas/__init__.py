"""The JSON Schemas memsolve validates against (package data), and one-line error messages.

jsonschema is the authority and words every error, but importing it costs a process ~45 ms:
:func:`conforms` answers "valid" for the keywords these schemas use, exactly as jsonschema
would (tests/test_schemas.py holds the two together on generated documents), and jsonschema
is imported only when a document is not valid, or when the answer needs it.
"""

from __future__ import annotations

import json
import math
import re
from collections import deque
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputError, shown, unknown
from ..source import Document

if TYPE_CHECKING:  # imported when an error is worded (see the module)
    import jsonschema
    from jsonschema import Draft202012Validator


@cache
def load_schema(name: str) -> dict[str, Any]:
    """The schema ``name`` (policy, records or result) as a dict."""
    # beside this module, by a plain path (importlib.resources cost every process ~5 ms to
    # import); from a zip archive only importlib.resources can read it
    try:
        text = Path(__file__).with_name(f"{name}.schema.json").read_text("utf-8")
    except OSError:
        from importlib import resources

        text = resources.files(__name__).joinpath(f"{name}.schema.json").read_text("utf-8")
    return json.loads(text)


@cache
def validator(name: str, definition: str | None = None) -> Draft202012Validator:
    """A validator for a schema, or for one of its ``$defs`` entries. The schemas ship with the
    package and are checked against the metaschema by the tests (tests/test_schemas.py), not in
    every process: the check cost a CLI round ~65 ms."""
    schema = load_schema(name)
    if definition is not None:
        schema = {"$schema": schema["$schema"], "$defs": schema["$defs"], "$ref": f"#/$defs/{definition}"}
    from jsonschema import Draft202012Validator

    return Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)


def first_error(
    validator_: Draft202012Validator, data: Any
) -> jsonschema.ValidationError | None:
    """The error a person should fix first: the earliest in document order, deepest first."""
    from jsonschema.exceptions import best_match, by_relevance

    errors = list(validator_.iter_errors(data))
    if not errors:
        return None
    relevance = by_relevance()

    def key(error: jsonschema.ValidationError) -> tuple[Any, ...]:
        # jsonschema's relevance, with paths that compare whatever their keys: YAML allows a
        # number as a mapping key beside strings, and comparing the two paths failed inside jsonschema
        return tuple(tuple(map(_step, part)) if isinstance(part, deque) else part for part in relevance(error))

    return best_match(errors, key=key)


def _step(part: Any) -> tuple[int, int, str]:
    """One step of a path: list indexes by number, string keys by text, other keys after them."""
    if isinstance(part, int) and not isinstance(part, bool):
        return (0, part, "")
    return (1, 0, part) if isinstance(part, str) else (2, 0, repr(part))


def describe(error: jsonschema.ValidationError) -> tuple[tuple[Any, ...], str]:
    """The path to point at and a one-line message for a schema error.

    A path that names an unexpected key is reported at the key (see :func:`schema_error`).
    """
    path = tuple(error.absolute_path)
    instance = error.instance
    kind = error.validator
    if kind == "additionalProperties" and isinstance(instance, dict):
        allowed = list(error.schema.get("properties", {}))
        extra = [k for k in instance if k not in allowed]
        if extra and allowed:
            key = extra[0]
            return path + (key,), unknown(key, allowed, "field")
    if kind == "required":
        return path, error.message.replace("'", "`").replace("is a required property", "is required")
    if kind == "type":
        # at the top of a file the "value" is the whole file (a wrong path can point anywhere):
        # name its type only, never echo its contents
        got = _shown(instance) if path else type_name(instance)
        return path, f"expected {_types(error.validator_value)}, got {got}"
    if kind in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        ops = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<"}
        bound = error.validator_value
        bound = f"{bound:g}" if isinstance(bound, float) else bound  # 1e+15, not 1000000000000000.0
        return path, f"expected a number {ops[kind]} {bound}, got {_shown(instance)}"
    if kind == "const":
        return path, f"expected `{error.validator_value}`, got {_shown(instance)}"
    if kind == "enum":
        options = ", ".join(f"`{v}`" for v in error.validator_value)
        return path, f"expected one of {options}, got {_shown(instance)}"
    if kind == "pattern":
        return path, f"{_shown(instance)} does not match the pattern `{error.validator_value}`"
    if kind == "oneOf" and error.context:
        deepest = max(error.context, key=lambda e: len(e.absolute_path))
        if len(deepest.absolute_path) > len(path):
            return describe(deepest)
        types = sorted({_types(e.validator_value) for e in error.context if e.validator == "type"})
        if types:
            return path, f"expected {' or '.join(types)}, got {_shown(instance) if path else type_name(instance)}"
    return path, error.message


def _types(value: Any) -> str:
    names = {"integer": "an integer", "number": "a number", "string": "a string",
             "boolean": "true or false", "object": "a mapping", "array": "a list", "null": "null"}
    if isinstance(value, list):
        return " or ".join(names.get(v, v) for v in value)
    return names.get(value, str(value))


def type_name(value: Any) -> str:
    """What kind of value this is, in words, without echoing it (except for a mapping or list)."""
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, (int, float)):
        return "a number"
    return "a string" if isinstance(value, str) else _shown(value)


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, (dict, list)):
        return "a mapping" if isinstance(value, dict) else "a list"
    if value is None:
        return "null"
    return f"`{shown(value)}`"


def check(
    doc: Document, data: Any, name: str, definition: str | None = None, prefix: Sequence[Any] = ()
) -> None:
    """Raise InputError (file:line:column, path, what was expected) at the first schema error."""
    if conforms(name, data, definition):
        return
    error = first_error(validator(name, definition), data)
    if error is None:
        return
    raise schema_error(doc, error, prefix)


def schema_error(doc: Document, error: jsonschema.ValidationError, prefix: Sequence[Any] = ()) -> InputError:
    path, message = describe(error)
    at_key = message.startswith("unknown field")
    return doc.error(tuple(prefix) + path, message, key=at_key)


# --- valid or not, without jsonschema ----------------------------------------------------


class _Unsure(Exception):
    """The answer needs jsonschema: a keyword, a reference or a value this check does not take."""


def conforms(name: str, data: Any, definition: str | None = None) -> bool:
    """Whether ``data`` is valid against the schema ``name`` (or one of its ``$defs``); False also
    where only jsonschema can tell (then :func:`check` asks it). Never True for a document
    jsonschema refuses."""
    root = load_schema(name)
    try:
        return _valid(root, root if definition is None else root["$defs"][definition], data)
    except _Unsure:
        return False


_JSON_TYPES = (dict, list, str, int, float, bool, type(None))
_ANNOTATIONS = frozenset(("$schema", "$id", "$defs", "$comment", "title", "description", "default", "examples"))


def _valid(root: dict[str, Any], node: Any, value: Any) -> bool:
    if isinstance(node, bool):
        return node
    if type(value) not in _JSON_TYPES or (type(value) is float and not math.isfinite(value)):
        raise _Unsure  # what jsonschema makes of other types (a Decimal is a number) is its own
    for keyword, argument in node.items():
        if keyword in _ANNOTATIONS:
            continue
        test = _KEYWORDS.get(keyword)
        if test is None:
            raise _Unsure
        if not test(root, node, argument, value):
            return False
    return True


def _is(kind: str, value: Any) -> bool:
    """jsonschema's types: a bool is no number; an integral float is an integer."""
    if kind == "integer":
        return type(value) is int or (type(value) is float and value.is_integer())
    if kind == "number":
        return type(value) in (int, float)
    return type(value) is {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}[kind]


def _equal(value: Any, expected: Any) -> bool:
    """jsonschema's equality for scalars (true is not 1; 1 is 1.0)."""
    if isinstance(value, (dict, list)) or isinstance(expected, (dict, list)):
        raise _Unsure
    if isinstance(value, bool) or isinstance(expected, bool):
        return type(value) is type(expected) and value == expected
    if isinstance(value, str) or isinstance(expected, str):
        return type(value) is type(expected) and value == expected
    return bool(value == expected)


def _keys(value: dict[Any, Any]) -> dict[Any, Any]:
    if not all(type(key) is str for key in value):
        raise _Unsure  # a YAML mapping may have numbers as keys
    return value


def _properties(root: dict[str, Any], node: dict[str, Any], argument: Any, value: Any) -> bool:
    return not isinstance(value, dict) or all(
        _valid(root, argument[key], item) for key, item in _keys(value).items() if key in argument)


def _additional(root: dict[str, Any], node: dict[str, Any], argument: Any, value: Any) -> bool:
    if not isinstance(value, dict):
        return True
    if "patternProperties" in node:
        raise _Unsure
    named = node.get("properties", {})
    return all(_valid(root, argument, item) for key, item in _keys(value).items() if key not in named)


def _number_test(compare: Callable[[Any, Any], bool]) -> Callable[[dict[str, Any], dict[str, Any], Any, Any], bool]:
    return lambda root, node, argument, value: not _is("number", value) or compare(value, argument)


def _unique(root: dict[str, Any], node: dict[str, Any], argument: Any, value: Any) -> bool:
    if not argument or not isinstance(value, list):
        return True
    if not all(type(item) is str for item in value):
        raise _Unsure
    return len(set(value)) == len(value)


def _one_of(root: dict[str, Any], node: dict[str, Any], argument: Any, value: Any) -> bool:
    return sum(_valid(root, branch, value) for branch in argument) == 1


def _if(root: dict[str, Any], node: dict[str, Any], argument: Any, value: Any) -> bool:
    branch = node.get("then", True) if _valid(root, argument, value) else node.get("else", True)
    return _valid(root, branch, value)


def _ref(root: dict[str, Any], node: dict[str, Any], argument: Any, value: Any) -> bool:
    if not argument.startswith("#/$defs/") or "/" in argument[8:]:
        raise _Unsure
    return _valid(root, root["$defs"][argument[8:]], value)


@cache
def _pattern(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


_KEYWORDS: dict[str, Callable[[dict[str, Any], dict[str, Any], Any, Any], bool]] = {
    "type": lambda root, node, argument, value: any(_is(kind, value) for kind in (
        [argument] if isinstance(argument, str) else argument)),
    "properties": _properties,
    "additionalProperties": _additional,
    "required": lambda root, node, argument, value: not isinstance(value, dict) or all(k in value for k in argument),
    "propertyNames": lambda root, node, argument, value: not isinstance(value, dict) or all(
        _valid(root, argument, key) for key in value),
    "minProperties": lambda root, node, argument, value: not isinstance(value, dict) or len(value) >= argument,
    "maxProperties": lambda root, node, argument, value: not isinstance(value, dict) or len(value) <= argument,
    "items": lambda root, node, argument, value: not isinstance(value, list) or all(
        _valid(root, argument, item) for item in value),
    "minItems": lambda root, node, argument, value: not isinstance(value, list) or len(value) >= argument,
    "uniqueItems": _unique,
    "minLength": lambda root, node, argument, value: not isinstance(value, str) or len(value) >= argument,
    "pattern": lambda root, node, argument, value: not isinstance(value, str) or bool(
        _pattern(argument).search(value)),
    "const": lambda root, node, argument, value: _equal(value, argument),
    "enum": lambda root, node, argument, value: any(_equal(value, option) for option in argument),
    "minimum": _number_test(lambda value, bound: value >= bound),
    "maximum": _number_test(lambda value, bound: value <= bound),
    "exclusiveMinimum": _number_test(lambda value, bound: value > bound),
    "exclusiveMaximum": _number_test(lambda value, bound: value < bound),
    "not": lambda root, node, argument, value: not _valid(root, argument, value),
    "oneOf": _one_of,
    "if": _if,
    "then": lambda root, node, argument, value: True,  # read by "if"
    "else": lambda root, node, argument, value: True,
    "$ref": _ref,
}
