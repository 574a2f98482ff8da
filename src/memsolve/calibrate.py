"""Calibrate the utility model on labelled queries (DESIGN §11): ``memsolve calibrate``.

A labelled file (``kind: LabelledQueries``, schemas/labelled.schema.json) names a records file
and, per query, the record ids that hold what it needs. Every eligible level of every labelled
query is one example: its features (:mod:`memsolve.utility_model`) and whether it covers a
relevant id (its record is one, or the record's or the level's ``covers`` names one). :func:`calibrate` fits the
logistic regression on all of them and reports recall@budget (the share of a query's relevant
ids the selection covers, averaged over queries) for the exact engine and greedy, with the
policy as given and with the fitted model, on the labelled set and on held-out files (k-fold
by file: each file's queries are scored by a model fitted on the other files).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from . import schemas
from .context import Context
from .errors import InputError, Location
from .policies.model import Policy, RelevanceRule
from .records import RecordSet, load_records
from .source import load_document
from .utility_model import FEATURES, UtilityModel, fit

KIND = "LabelledQueries"
RIDGE = 1e-4
ENGINES = ("exact", "greedy")


@dataclass(frozen=True)
class LabelledQuery:
    query: str
    relevant: tuple[str, ...]
    now: Any = None
    session: str | None = None
    tenant: str | None = None
    budget: int | None = None

    def context(self) -> Context:
        return Context(now=self.now, session=self.session, query=self.query, budget=self.budget, tenant=self.tenant)


@dataclass(frozen=True)
class LabelledSet:
    """One labelled file: its records and queries (``sha256`` of the file's bytes)."""

    file: str
    records: RecordSet
    queries: tuple[LabelledQuery, ...]
    sha256: str


def load_labelled(path: str | Path) -> LabelledSet:
    """Read a LabelledQueries file and the records it names; InputError at file:line."""
    doc, raw = load_document(path)
    data = doc.data
    if isinstance(data, dict) and "kind" in data and data["kind"] != KIND:
        raise doc.error(("kind",), f"expected `kind: {KIND}`, got `{data['kind']}`")
    schemas.check(doc, data, "labelled")
    if "records" not in data:
        raise doc.error((), "a labelled file for calibrate names its records: add `records: FILE` (relative to it)")
    records_path = Path(doc.file).parent / data["records"]
    if not records_path.is_file():
        raise doc.error(("records",), f"no records file at {records_path}")
    records = load_records(records_path)
    queries = tuple(LabelledQuery(q["query"], tuple(q["relevant"]), q.get("now"), q.get("session"), q.get("tenant"),
                                  q.get("budget")) for q in data["queries"])
    return LabelledSet(str(path), records, queries, hashlib.sha256(raw).hexdigest())


# --- examples and recall ----------------------------------------------------------------


def _probe(policy: Policy) -> Policy:
    """The policy with a model over every feature: the compile stage then computes them all."""
    probe = UtilityModel(FEATURES, (0.0,) * len(FEATURES), 0.0)
    return replace(policy, utility=replace(policy.utility, source="relevance", model=probe))


def check_policy(policy: Policy) -> None:
    if not policy.rules_of(RelevanceRule):
        raise InputError("calibrate needs a `relevance` rule in the policy: the model's features are its scores",
                         policy.locate("rules"))


def covered(record: Any, level: str | None = None) -> set[str]:
    """The ids a record at ``level`` holds: its own, its ``covers``, and that level's ``covers``."""
    ids = {record.id, *record.covers}
    for offered in record.levels:
        if offered.name == level:
            ids.update(offered.covers)
    return ids


def examples(policy: Policy, labelled: LabelledSet) -> tuple[np.ndarray, np.ndarray]:
    """Every labelled query's eligible, utility-less levels: features (m, len(FEATURES)) and labels."""
    from .pipeline import prepare

    probe = _probe(policy)
    xs, ys = [], []
    for q in labelled.queries:
        compiled = prepare(probe, labelled.records, q.context()).compiled
        if compiled.features is None or compiled.modelled is None:
            continue
        relevant = set(q.relevant)
        chosen = compiled.modelled
        hit = np.array([[bool(covered(r, name) & relevant) for name in compiled.levels] for r in compiled.records],
                       dtype=bool).reshape(chosen.shape)
        xs.append(compiled.features[chosen])
        ys.append(hit[chosen])
    if not xs:
        return np.zeros((0, len(FEATURES))), np.zeros(0)
    return np.concatenate(xs), np.concatenate(ys).astype(np.float64)


def recall(policy: Policy, labelled: LabelledSet, engine: str) -> list[float]:
    """Per query: the share of its relevant ids the ``engine``'s selection covers (``exact``: the
    policy's own engine)."""
    from .pipeline import run

    out = []
    for q in labelled.queries:
        result = run(policy, labelled.records, q.context(), engine=None if engine == "exact" else engine,
                     trace="none").result
        held = {rid for chosen in result.selected
                for rid in covered(_record_of(labelled.records, chosen.id), chosen.level)}
        out.append(len(held & set(q.relevant)) / len(q.relevant))
    return out


def _record_of(records: RecordSet, rid: str) -> Any:
    index = records.columns.memo(("calibrate-ids",), lambda: {r.id: r for r in records.columns.records})
    return index[rid]


# --- the fit ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Recall:
    """Mean recall@budget of the exact engine and greedy."""

    exact: float
    greedy: float


@dataclass(frozen=True)
class Calibration:
    model: UtilityModel
    examples: int
    positives: int
    before: Recall  # the policy as given, on every labelled query
    after: Recall  # with the fitted model, on every labelled query (in sample)
    held_out: Recall | None  # each file scored by a model fitted on the others (None: one file)
    held_out_before: Recall | None


def features_used(policy: Policy, sets: Sequence[LabelledSet]) -> tuple[str, ...]:
    """Every feature but the rule's own scorer again (``score`` is it), ``external`` only when
    some record carries a ``score``."""
    external = any(r.score is not None for s in sets for r in s.records.records)
    scorer = policy.rules_of(RelevanceRule)[-1].scorer
    return tuple(f for f in FEATURES if (f != "external" or external) and f != scorer)


def fit_model(policy: Policy, sets: Sequence[LabelledSet], names: Sequence[str]) -> tuple[UtilityModel, int, int]:
    xs, ys = zip(*(examples(policy, s) for s in sets), strict=True)
    x, y = np.concatenate(xs), np.concatenate(ys)
    if not len(y) or y.min() == y.max():
        raise InputError("calibrate needs examples of both kinds: eligible levels that cover a relevant id and "
                         "levels that do not", Location(sets[0].file))
    columns = [FEATURES.index(n) for n in names]
    found = fit(x[:, columns], y, ridge=RIDGE)
    provenance = {
        "files": [Path(s.file).name for s in sets],
        "queries": sum(len(s.queries) for s in sets),
        "examples": int(len(y)),
        "positives": int(y.sum()),
        "labelled_sha256": hashlib.sha256("".join(s.sha256 for s in sets).encode()).hexdigest(),
        "method": f"logistic regression, standardised features, Newton/IRLS, ridge {RIDGE:g}",
    }
    model = UtilityModel(tuple(names), tuple(float(f"{c:.6g}") for c in found.coef),
                         float(f"{found.intercept:.6g}"), provenance)
    return model, int(len(y)), int(y.sum())


def with_model(policy: Policy, model: UtilityModel) -> Policy:
    return replace(policy, utility=replace(policy.utility, source="relevance", model=model))


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if values else 0.0


def measure(policy: Policy, sets: Sequence[LabelledSet]) -> Recall:
    return Recall(*(_mean([v for s in sets for v in recall(policy, s, engine)]) for engine in ENGINES))


def calibrate(policy: Policy, sets: Sequence[LabelledSet], folds: int | None = None) -> Calibration:
    """Fit on every labelled file, and measure; held-out recall by k-fold over the files
    (``folds``: default one fold per file, at most 10)."""
    check_policy(policy)
    names = features_used(policy, sets)
    model, count, positives = fit_model(policy, sets, names)
    before, after = measure(policy, sets), measure(with_model(policy, model), sets)
    held = held_before = None
    k = min(len(sets), folds or 10)
    if k >= 2:
        per_engine: dict[str, list[float]] = {e: [] for e in ENGINES}
        for fold in range(k):
            test = [s for i, s in enumerate(sets) if i % k == fold]
            train = [s for i, s in enumerate(sets) if i % k != fold]
            fold_model, _, _ = fit_model(policy, train, names)
            for engine in ENGINES:
                per_engine[engine] += [v for s in test for v in recall(with_model(policy, fold_model), s, engine)]
        held = Recall(_mean(per_engine["exact"]), _mean(per_engine["greedy"]))
        held_before = before
    return Calibration(model, count, positives, before, after, held, held_before)


def policy_text(path: str | Path, model: UtilityModel) -> str:
    """The policy file's YAML with ``utility.from: relevance`` and the fitted ``utility.model``
    (the rest as written; comments are not kept)."""
    import yaml

    data = yaml.safe_load(Path(path).read_text("utf-8"))
    utility = data.setdefault("utility", {})
    utility["from"] = "relevance"
    utility["model"] = model.to_dict()
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
