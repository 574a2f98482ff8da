"""The page's knobs as edits of the policy's YAML text.

The policy text in the editor is the one source of truth: a knob reads its value from the text
and writes it back into the text (comments and layout kept, by ruamel.yaml's round trip), so
what the page runs, what the editor shows and what "save as policy" downloads are one document,
and ``memsolve --policy`` on that document gives the page's result.

A knob's value arrives as the text of its form field and is read as YAML, exactly as the CLI's
``--set KEY=VALUE`` reads VALUE; validating it is the policy loader's job (the page shows the
loader's one line next to the field). An empty field removes the setting (``tenant``,
``context.query``, ``budget.max_records``, the ``max_age`` rule) where the policy may omit it.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError

from ..errors import InputError, Location
from ..source import parse_text


@dataclass(frozen=True)
class Knob:
    """One form field: where it lives in the policy, and how the form shows it."""

    name: str
    label: str
    path: tuple[str, ...]  # ("rules", TYPE, KEY) addresses a rule by its type, like --set
    kind: str  # text | number | bool | list | choice
    choices: tuple[str, ...] = ()
    removable: bool = False  # an empty field removes the setting


# the knobs of seed 004, then memsolve's own (engine, fidelity, price); the order is the form's
KNOBS: tuple[Knob, ...] = (
    Knob("query", "Question (query)", ("context", "query"), "text", removable=True),
    Knob("tenant", "Active tenant", ("tenant",), "text", removable=True),
    Knob("stores", "Memory stores", ("rules", "stores", "allow"), "list"),
    Knob("include_previous", "Include previous sessions", ("rules", "sessions", "include_previous"), "bool"),
    Knob("max_age", "Maximum age", ("rules", "max_age"), "number", removable=True),
    Knob("latest_key", "Keep latest fact per key", ("rules", "latest_key"), "bool"),
    Knob("budget", "Context word budget", ("budget", "tokens"), "number"),
    Knob("max_records", "Maximum retrieved records", ("budget", "max_records"), "number", removable=True),
    Knob("recency_weight", "Recency weight", ("rules", "relevance", "recency_weight"), "number"),
    Knob("engine", "Engine", ("solver", "engine"), "choice", ("cp-sat", "dp", "greedy")),
    Knob("fidelity", "Fidelity levels", ("fidelity",), "list"),
    Knob("price_c", "Price scale c", ("pricing", "c"), "number", removable=True),
    Knob("price_q0", "Queue q0 (λ = c·q0)", ("pricing", "q0"), "number", removable=True),
)
BY_NAME = {knob.name: knob for knob in KNOBS}
# where a key missing from the policy is inserted: after the first of these keys it has
_AFTER = {"tenant": ("records", "metadata"), "context": ("tenant", "records", "metadata"),
          "budget": ("context", "tenant", "records", "metadata"), "pricing": ("utility", "rules"),
          "solver": ("pricing", "tokens", "utility", "rules")}
# a rule the policy lacks is inserted before the first of these rule types (rule order decides
# which failing rule is reported), else appended
_RULE_BEFORE = {"stores": ("sessions", "max_age", "freshness", "version_authority", "latest_key", "relevance"),
                "sessions": ("max_age", "freshness", "version_authority", "latest_key", "relevance"),
                "max_age": ("freshness", "version_authority", "latest_key", "relevance"),
                "latest_key": ("relevance",), "relevance": ()}
_RULE_DEFAULT = {"stores": {"allow": []}, "sessions": {"include_previous": True}, "max_age": None,
                 "latest_key": {}, "relevance": {}}


def _yaml() -> YAML:
    yaml = YAML()  # round trip: comments, key order and flow style survive an edit
    yaml.preserve_quotes = True
    yaml.width = 4096
    yaml.indent(mapping=2, sequence=4, offset=2)  # `  - stores: ...`, as the bundled policies write lists
    return yaml


def load(text: str, file: str) -> Any:
    """The policy text as a round-trip document; a syntax error is the loader's InputError.

    The CLI's reader checks the text first: it words the error as the CLI does, and its structure
    limits (nesting depth, size) refuse in milliseconds what the round-trip parser would recurse
    on for seconds before failing with a RecursionError.
    """
    parse_text(text, file, "yaml")
    try:
        return _yaml().load(text)
    except (MarkedYAMLError, RecursionError):
        raise InputError("the policy is not valid YAML", Location(file)) from None


def dump(data: Any) -> str:
    stream = io.StringIO()
    _yaml().dump(data, stream)
    return stream.getvalue()


def _rule_entry(data: Any, kind: str) -> Mapping[str, Any] | None:
    rules = data.get("rules") if isinstance(data, Mapping) else None
    if not isinstance(rules, list):
        return None
    return next((r for r in rules if isinstance(r, Mapping) and kind in r), None)


def _get(data: Any, path: tuple[str, ...]) -> Any:
    node = data
    if path[0] == "rules":
        node = _rule_entry(data, path[1])
        if node is None:
            return None
        path = path[1:]
    for part in path:
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def _as_field(knob: Knob, value: Any, present: bool) -> Any:
    if knob.name == "latest_key":
        return present
    if knob.kind == "bool":
        return True if value is None else value  # sessions: previous sessions are included by default
    if knob.kind == "list":
        return ", ".join(str(v) for v in value) if isinstance(value, list) else ("" if value is None else str(value))
    return "" if value is None else str(value) if not isinstance(value, bool) else str(value).lower()


def read(data: Any) -> dict[str, Any]:
    """Every knob's value as its form field shows it, read from the policy document."""
    values = {}
    for knob in KNOBS:
        present = _rule_entry(data, "latest_key") is not None if knob.name == "latest_key" else False
        values[knob.name] = _as_field(knob, _get(data, knob.path), present)
    return values


def _value(knob: Knob, field: Any) -> tuple[bool, Any]:
    """(remove, value) for a field: booleans as they are, text read as YAML like --set's VALUE."""
    if knob.kind == "bool":
        if not isinstance(field, bool):
            raise InputError(f"{knob.name}: expected true or false")
        return False, field
    text = "" if field is None else str(field)
    if not text.strip():
        if knob.removable:
            return True, None
        if knob.kind != "list":
            raise InputError(f"{knob.name}: a value is required")
    if knob.kind == "list":
        return False, CommentedSeq(_scalar(part.strip()) for part in text.split(",") if part.strip())
    if knob.kind == "text":
        return False, text
    return False, _scalar(text.strip())


def _scalar(text: str) -> Any:
    try:
        return parse_text(text, "field", "yaml").data
    except InputError:
        return text  # not a YAML value: kept as text, and the loader names the field's type


def _insert(node: CommentedMap, key: str, value: Any) -> None:
    keys = list(node)
    for anchor in _AFTER.get(key, ()):
        if anchor in node:
            node.insert(keys.index(anchor) + 1, key, value)
            return
    node[key] = value


def apply(data: Any, name: str, field: Any) -> None:
    """Write one knob's field into the document (in place)."""
    knob = BY_NAME.get(name)
    if knob is None:
        raise InputError(f"unknown knob `{name}`")
    if not isinstance(data, CommentedMap):
        raise InputError("the policy must be a mapping before its knobs can be set")
    remove, value = _value(knob, field)
    if knob.path[0] == "rules":
        _apply_rule(data, knob, remove, value)
        return
    node = data
    for part in knob.path[:-1]:
        child = node.get(part)
        if not isinstance(child, CommentedMap):
            if remove:
                return
            child = CommentedMap()
            child.fa.set_flow_style()
            _insert(node, part, child)
        node = child
    last = knob.path[-1]
    if remove:
        node.pop(last, None)
    elif last in node:
        node[last] = value
    else:
        _insert(node, last, value)


def _apply_rule(data: CommentedMap, knob: Knob, remove: bool, value: Any) -> None:
    kind = knob.path[1]
    rules = data.get("rules")
    if not isinstance(rules, list):
        rules = CommentedSeq()
        data["rules"] = rules
    entry = _rule_entry(data, kind)
    if knob.name == "latest_key":
        remove, value = not value, CommentedMap()
        value.fa.set_flow_style()
    if remove:
        if entry is not None:
            rules.remove(entry)
        return
    if entry is None:
        default = _RULE_DEFAULT[kind]
        entry = CommentedMap([(kind, CommentedMap(default) if isinstance(default, dict) else default)])
        if isinstance(entry[kind], CommentedMap):
            entry[kind].fa.set_flow_style()
        types = [next((k for k in r if k != "id"), None) if isinstance(r, Mapping) else None for r in rules]
        at = next((i for i, t in enumerate(types) if t in _RULE_BEFORE[kind]), len(rules))
        rules.insert(at, entry)
    if len(knob.path) == 2:
        entry[kind] = value
    else:
        if not isinstance(entry[kind], Mapping):
            entry[kind] = CommentedMap()
            entry[kind].fa.set_flow_style()
        entry[kind][knob.path[2]] = value


def field_of(data: Any, path: str) -> str | None:
    """The knob an error's path (``rules[2].max_age``, ``budget.tokens``) belongs to, if any."""
    head = path.split(".")[0]
    if head.startswith("rules[") and "]" in head:
        try:
            index = int(head[len("rules["):head.index("]")])
            entry = data["rules"][index]
        except (ValueError, LookupError, TypeError):
            return None
        if not isinstance(entry, Mapping):
            return None
        kind = next((k for k in entry if k != "id"), None)
        rest = path[len(head):].lstrip(".")
        for knob in KNOBS:
            if knob.path[0] == "rules" and knob.path[1] == kind and (len(knob.path) == 2 or
                                                                     rest.startswith(f"{kind}.{knob.path[2]}") or
                                                                     rest == kind):
                return knob.name
        return None
    best = None
    for knob in KNOBS:
        dotted = ".".join(knob.path)
        if knob.path[0] != "rules" and (path == dotted or path.startswith(dotted + ".") or
                                        path.startswith(dotted + "[")):
            best = knob.name
    return best
