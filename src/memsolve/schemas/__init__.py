"""The JSON Schemas memsolve validates against (package data), and one-line error messages."""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Sequence
from functools import cache
from importlib import resources
from typing import Any

import jsonschema
from jsonschema import Draft202012Validator

from ..errors import InputError, shown, unknown
from ..source import Document


@cache
def load_schema(name: str) -> dict[str, Any]:
    """The schema ``name`` (policy, records or result) as a dict."""
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
    return Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)


def first_error(
    validator_: Draft202012Validator, data: Any
) -> jsonschema.ValidationError | None:
    """The error a person should fix first: the earliest in document order, deepest first."""
    errors = list(validator_.iter_errors(data))
    if not errors:
        return None
    return jsonschema.exceptions.best_match(errors, key=_relevance)


_RELEVANCE = jsonschema.exceptions.by_relevance()


def _relevance(error: jsonschema.ValidationError) -> tuple[Any, ...]:
    """jsonschema's relevance, with paths that compare whatever their keys: YAML allows a number
    as a mapping key beside strings, and comparing the two paths failed inside jsonschema."""
    return tuple(tuple(map(_step, part)) if isinstance(part, deque) else part for part in _RELEVANCE(error))


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
    error = first_error(validator(name, definition), data)
    if error is None:
        return
    raise schema_error(doc, error, prefix)


def schema_error(doc: Document, error: jsonschema.ValidationError, prefix: Sequence[Any] = ()) -> InputError:
    path, message = describe(error)
    at_key = message.startswith("unknown field")
    return doc.error(tuple(prefix) + path, message, key=at_key)
