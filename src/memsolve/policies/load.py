"""Load a policy: YAML (safe) → schema → semantic checks → :class:`Policy`."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from .. import schemas
from ..context import Context
from ..errors import InputError, Location, not_finite, unknown
from ..source import Document, find_non_finite, load_document, parse_text
from .model import (
    DEFAULT_FIDELITY,
    DEFAULT_STORES,
    RULE_TYPES,
    Budget,
    CacheSettings,
    Duration,
    FreshnessRule,
    LatestKeyRule,
    MaxAgeRule,
    Policy,
    Pricing,
    RelevanceRule,
    Rule,
    SessionsRule,
    SolverSettings,
    StoresRule,
    UtilitySpec,
    VersionAuthorityRule,
)


def load_policy(path: str | Path, overrides: Sequence[str] = ()) -> Policy:
    """Read, validate and return the policy at ``path``; raises InputError with file:line.

    ``overrides`` are ``KEY=VALUE`` edits applied before validation (the CLI's ``--set``): KEY
    is a dotted path, a rule addressed by the id traces show (``rules.max-age=48``, or an ``id:``
    the author gave) or by its type (``rules.max_age=48``; ``rules.relevance.recency_weight=1``);
    a name that matches no rule suggests the closest id. VALUE is read as YAML (``[episodic]``,
    ``false``, ``24h``).
    """
    doc, raw = load_document(path, fmt="yaml")
    digest = hashlib.sha256(raw)
    for override in overrides:
        _apply(doc, override)
        digest.update(b"\0" + override.encode("utf-8"))
    return _build(doc, digest.hexdigest())


def _apply(doc: Document, override: str) -> None:
    key, sep, text = override.partition("=")
    where = Location(doc.file, path=key)
    if not sep or not key:
        raise InputError(f"--set expects KEY=VALUE, got `{override}`", where)
    try:
        value = parse_text(text, "--set", "yaml").data if text.strip() else ""
    except InputError:
        raise InputError(f"--set {key}: `{text}` is not a YAML value", where) from None
    if not isinstance(doc.data, dict):
        raise InputError("a policy must be a mapping", where)
    node: Any = doc.data
    parts = key.split(".")
    for depth, part in enumerate(parts):
        last = depth == len(parts) - 1
        if isinstance(node, list):  # the rule list: an entry by the id traces show, or by its type
            entry = _rule_entry(node, part)
            if entry is None:
                raise InputError(f"--set {key}: {unknown(part, _rule_ids(node), 'rule')} (the ids traces show)",
                                 where)
            kind = next((k for k in entry if k != "id"), part)
            if last:
                entry[kind] = value
                return
            node = entry[kind]
            continue
        if not isinstance(node, dict):
            raise InputError(f"--set {key}: `{'.'.join(parts[:depth])}` is not a mapping", where)
        if last:
            node[part] = value
            return
        node = node.setdefault(part, {})


def _rule_ids(rules: list[Any]) -> list[str]:
    """The ids the rule entries get (as in traces): ``id:``, else the type with ``_`` written ``-``."""
    return [str(r.get("id", k.replace("_", "-"))) for r in rules if isinstance(r, dict)
            for k in [next((k for k in r if k != "id"), "")]]


def _rule_entry(rules: list[Any], name: str) -> dict[str, Any] | None:
    """The entry a name addresses: its trace id first, then its type written either way."""
    entries = [r for r in rules if isinstance(r, dict)]
    for entry, rid in zip(entries, _rule_ids(entries), strict=True):
        if rid == name:
            return entry
    return next((r for r in entries if name.replace("-", "_") in r), None)


def policy_from_text(text: str, file: str = "<policy>") -> Policy:
    """Validate a policy given as YAML text (for callers that keep policies in memory)."""
    doc = parse_text(text, file, "yaml")
    return _build(doc, hashlib.sha256(text.encode("utf-8")).hexdigest())


def _build(doc: Document, sha256: str) -> Policy:
    data = doc.data
    if not isinstance(data, dict):
        raise doc.error((), "a policy must be a mapping with apiVersion, kind and metadata")
    bad = find_non_finite(data)
    if bad is not None:
        raise doc.error(bad[0], not_finite(bad[1]))
    _check_rule_shapes(doc, data.get("rules"))
    schemas.check(doc, data, "policy")

    stores = tuple(data.get("stores", DEFAULT_STORES))
    fidelity = tuple(data.get("fidelity", DEFAULT_FIDELITY))
    rules = tuple(_rule(doc, index, item, stores) for index, item in enumerate(data.get("rules", [])))
    _check_unique_ids(doc, rules)

    utility = data.get("utility", {})
    if utility.get("model") is not None:  # a policy with a utility model scores with bm25 unless it says otherwise
        rules = tuple(replace(r, scorer="bm25") if isinstance(r, RelevanceRule) and "scorer" not in (r.config or {})
                      else r for r in rules)
    for level in utility.get("retention", {}):
        if level not in fidelity:
            raise doc.error(
                ("utility", "retention", level), unknown(level, fidelity, "fidelity level"), key=True
            )

    records = data.get("records")
    if records is not None and doc.file and not doc.file.startswith("<"):
        records = str(Path(doc.file).parent / records)

    budget = data.get("budget", {})
    context = data.get("context", {})
    solver = data.get("solver", {})
    return Policy(
        name=data["metadata"]["name"],
        description=data["metadata"].get("description", ""),
        file=doc.file,
        sha256=sha256,
        records=records,
        tenant=data.get("tenant"),
        context=Context(now=context.get("now"), session=context.get("session"), query=context.get("query")),
        budget=Budget(budget.get("tokens"), budget.get("max_records")),
        stores=stores,
        fidelity=fidelity,
        rules=rules,
        utility=UtilitySpec(
            utility.get("from"),
            float(utility.get("temperature", 0.05)),
            dict(utility.get("retention", {})),
            _utility_model(doc, utility),
        ),
        token_counter=data.get("tokens", {}).get("counter", "words"),
        pricing=Pricing(**{k: float(v) for k, v in data.get("pricing", {}).items()}),
        solver=SolverSettings(
            solver.get("engine", "cp-sat"),
            solver.get("cross_check", "dp"),
            float(solver.get("time_limit_s", 10.0)),
        ),
        on_invalid_record=data.get("on_invalid_record", "error"),
        cache=None if "cache" not in data else _cache(doc, data["cache"]),
        source=doc,
    )


def _utility_model(doc: Document, utility: Mapping[str, Any]) -> Any:
    """The ``utility.model`` block as a UtilityModel (imported here: only policies with one pay for it)."""
    config = utility.get("model")
    if config is None:
        return None
    if utility.get("from") != "relevance":
        raise doc.error(("utility", "model"), "a utility model derives utilities from relevance: add `from: relevance`",
                        key=True)
    from ..utility_model import model_from_config

    if isinstance(config, dict) and len(config["coef"]) != len(config["features"]):
        raise doc.error(("utility", "model", "coef"),
                        f"expected {len(config['features'])} coefficients, one per feature, got {len(config['coef'])}")
    return model_from_config(config)


def _cache(doc: Document, config: Mapping[str, Any]) -> CacheSettings:
    """The ``cache`` block; reading from the cache never costs more than writing (DESIGN §15)."""
    from ..cache import rates  # imported on use: only policies with a cache block pay for it

    settings = CacheSettings(**config)
    r = rates(settings)
    if r.write < r.read:
        raise doc.error(("cache", "write" if "write" in config else "read"),
                        f"the write multiplier ({r.write:g}) is below the read multiplier ({r.read:g}); "
                        "a cached prefix would cost more than a new one")
    return settings


def _check_rule_shapes(doc: Document, rules: Any) -> None:
    """Name the rule type an author meant before the schema's generic oneOf message can."""
    if not isinstance(rules, list):
        return
    for index, item in enumerate(rules):
        if not isinstance(item, dict):
            raise doc.error(("rules", index), "expected a mapping like `- max_age: 168`")
        kinds = [key for key in item if key != "id"]
        for key in kinds:
            if key not in RULE_TYPES:
                raise doc.error(("rules", index, key), unknown(key, RULE_TYPES, "rule type"), key=True)
        if len(kinds) != 1:
            raise doc.error(
                ("rules", index),
                "each rule entry names exactly one rule type (plus an optional `id`), "
                f"found {len(kinds)}",
            )


def _rule(doc: Document, index: int, item: Mapping[str, Any], stores: tuple[str, ...]) -> Rule:
    kind = next(key for key in item if key != "id")
    config = item[kind]
    here = ("rules", index, kind)
    base = dict(
        id=item.get("id", kind.replace("_", "-")),
        type=kind,
        config=config,
        where=doc.locate(("rules", index)),
    )

    def duration(value: Any, *path: Any) -> Duration | None:
        if value is None:
            return None
        return Duration(value, doc.locate(here + path))

    if kind == "stores":
        for position, store in enumerate(config["allow"]):
            if store not in stores:
                raise doc.error(here + ("allow", position), unknown(store, stores, "store"))
        return StoresRule(**base, allow=tuple(config["allow"]))
    if kind == "sessions":
        return SessionsRule(**base, include_previous=config["include_previous"])
    if kind == "max_age":
        return MaxAgeRule(**base, limit=duration(config))
    if kind == "freshness":
        by_store = {}
        for store, ttl in config.get("ttl_by_store", {}).items():
            if store not in stores:
                raise doc.error(here + ("ttl_by_store", store), unknown(store, stores, "store"), key=True)
            by_store[store] = duration(ttl, "ttl_by_store", store)
        return FreshnessRule(
            **base, default_ttl=duration(config.get("default_ttl"), "default_ttl"), ttl_by_store=by_store
        )
    if kind == "version_authority":
        return VersionAuthorityRule(
            **base,
            current_version=config.get("current_version"),
            current_versions=dict(config.get("current_versions", {})),
        )
    if kind == "latest_key":
        return LatestKeyRule(**base)
    if kind == "relevance":
        return RelevanceRule(
            **base,
            recency_weight=float(config.get("recency_weight", 0.0)),
            half_life=duration(config.get("half_life"), "half_life"),
            scorer=config.get("scorer", "tfidf"),
        )
    raise AssertionError(kind)  # _check_rule_shapes admits only RULE_TYPES


def _check_unique_ids(doc: Document, rules: tuple[Rule, ...]) -> None:
    seen: dict[str, int] = {}
    for index, rule in enumerate(rules):
        if rule.id in ("tenant", "fidelity-ceiling", "invalid"):
            raise InputError(f"rule id `{rule.id}` is reserved", rule.where)
        if rule.id in seen:
            raise InputError(
                f"rule id `{rule.id}` is used twice (also rules[{seen[rule.id]}]); give one an `id:`",
                rule.where,
            )
        seen[rule.id] = index


__all__ = ["load_policy", "policy_from_text", "Location"]
