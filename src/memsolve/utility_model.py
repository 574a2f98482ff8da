"""Utilities as calibrated probabilities, scored per level (DESIGN §11).

With ``utility: {from: relevance, model: ...}`` a level's utility is the modelled probability
that it holds what the query needs, p = σ(β·x + b), times ``retention[level]`` where the policy
gives one. The features x of a level, computed over the tenant's records (never another's):

    score       the relevance rule's scorer (tfidf or bm25) on the level's own text (a level with
                no text is scored on the record's); the scorer's similarity, recency left out
    gap         score − the best score of any eligible record's level for this query
    log_rank    ln(rank) of the score among the eligible levels (1 = best; ties share a rank)
    log_tokens  ln(1 + tokens) of the level, counted with the policy's counter
    log_age     ln(1 + age), age in the records' own units (hours for RFC 3339 times)
    external    the record's own ``score`` in [0, 1] (a store's search score or an embedding
                similarity), 0 where the record carries none
    tfidf, bm25 both lexical scorers on the level's own text, whichever the rule uses
    matched     the share of the query's distinct terms the level's text holds
    neighbour   the best score of the record just before and just after this one in its session
                (input order; a tenant's records without a session are one sequence), whatever
                the rules decided about them: in a conversation an answer often sits next to
                the turn that names the topic

The last four are computed only for a model that names them.

A level's text is indexed with the records' (one term index per tenant, built once per record
set and fidelity list): a short extracted fact competes with the turns it came from.

:data:`DEFAULT_MODEL` is used with ``model: default``; how it was fitted is in its ``fitted``
block and in README "Relevance and utility". :func:`fit` is the logistic regression
``memsolve calibrate`` runs: standardised features, Newton steps (IRLS) with a small ridge
penalty, deterministic to the bit for the same inputs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .relevance import TermIndex, record_text

EXTRA = ("tfidf", "bm25", "matched", "neighbour")
FEATURES = ("score", "gap", "log_rank", "log_tokens", "log_age", "external", *EXTRA)
HOUR = 3600.0


@dataclass(frozen=True)
class UtilityModel:
    """p = σ(coef · x + intercept) over ``features`` (raw, unstandardised units)."""

    features: tuple[str, ...]
    coef: tuple[float, ...]
    intercept: float
    fitted: Mapping[str, Any] = field(default_factory=dict)  # provenance: what it was fitted on

    def __post_init__(self) -> None:
        if len(self.features) != len(self.coef):
            raise ValueError("a utility model needs one coefficient per feature")
        unknown = [f for f in self.features if f not in FEATURES]
        if unknown:
            raise ValueError(f"unknown utility feature {unknown[0]!r} (known: {', '.join(FEATURES)})")

    @property
    def columns(self) -> list[int]:
        """Each of the model's features' position in :data:`FEATURES`."""
        return [FEATURES.index(f) for f in self.features]

    def logit(self, x: np.ndarray) -> np.ndarray:
        """β·x + b over the last axis of ``x`` (all of :data:`FEATURES`, in that order)."""
        return x[..., self.columns] @ np.asarray(self.coef, dtype=np.float64) + self.intercept

    def probability(self, x: np.ndarray) -> np.ndarray:
        return sigmoid(self.logit(x))

    def to_dict(self) -> dict[str, Any]:
        """The policy's ``utility.model`` block."""
        out: dict[str, Any] = {"features": list(self.features), "coef": [_short(c) for c in self.coef],
                               "intercept": _short(self.intercept)}
        if self.fitted:
            out["fitted"] = dict(self.fitted)
        return out


def _short(value: float) -> float:
    """A coefficient at 6 significant digits: what a person reads, and what the policy keeps."""
    return float(f"{value:.6g}")


def sigmoid(z: np.ndarray) -> np.ndarray:
    # split by sign so that neither branch overflows; never exactly 0 or 1 for finite z below ~36
    out = np.empty_like(z, dtype=np.float64)
    pos = z >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-z[pos]))
    ez = np.exp(z[~pos])
    out[~pos] = ez / (1.0 + ez)
    return out


# Fitted by `python benchmarks/locomo.py --data ../shared/data/locomo-dev --fit-default`: the five
# development conversations of LoCoMo (26, 30, 41, 42, 43), their 760 answerable questions
# (categories 1-4), one record per turn (raw text, no levels), relevance rule scorer bm25; one
# example per eligible turn and question (325,523, of which 1,092 evidence turns), standardised
# features, Newton/IRLS with ridge 1e-4 (memsolve.calibrate.fit_model). The features name both
# scorers rather than `score`, so the model reads the same whichever scorer the rule uses. Length
# weighs in: a longer turn is likelier to hold an answer at the same scores. `external` is left
# out (the data has none).
DEFAULT_MODEL = UtilityModel(
    features=("tfidf", "bm25", "matched", "neighbour", "log_rank", "log_tokens", "log_age"),
    coef=(3.62293, 1.04819, 2.44331, 1.92222, -0.344946, 1.37938, 0.0845917),
    intercept=-10.901,
    fitted={"files": ["26.json", "30.json", "41.json", "42.json", "43.json"], "queries": 760,
            "examples": 325523, "positives": 1092,
            "labelled_sha256": "2187c1115a3070ad367c686013912e1da17105cdddf263f527aafea2380af658",
            "method": "logistic regression, standardised features, Newton/IRLS, ridge 0.0001"},
)


def model_from_config(config: Any) -> UtilityModel | None:
    """The model a policy's ``utility.model`` names: ``default``, a block, or none (absent)."""
    if config is None:
        return None
    if config == "default":
        return DEFAULT_MODEL
    return UtilityModel(tuple(config["features"]), tuple(float(c) for c in config["coef"]),
                        float(config["intercept"]), dict(config.get("fitted", {})))


# --- features ---------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class LevelIndex:
    """Every record's levels as documents, one term index per tenant: a level with its own text
    is a document of its own, a level without one reads its record's."""

    groups: tuple[tuple[np.ndarray, TermIndex], ...]  # (the documents' global numbers, index) per tenant
    source: np.ndarray  # int64 (n, k): the document each record's level is scored by
    size: int  # documents in all

    @classmethod
    def of(cls, records: Sequence[Any], levels: Sequence[str]) -> LevelIndex:
        column = {name: j for j, name in enumerate(levels)}
        n, k = len(records), len(levels)
        source = np.zeros((n, k), dtype=np.int64)
        by_tenant: dict[str | None, tuple[list[int], list[str]]] = {}
        size = 0
        for row, record in enumerate(records):
            numbers, texts = by_tenant.setdefault(record.tenant, ([], []))
            own = record_text(record)
            base = size
            numbers.append(base)
            texts.append(own)
            size += 1
            source[row, :] = base
            for level in record.levels:
                j = column.get(level.name)
                if j is None or level.text is None or level.text == own:
                    continue
                numbers.append(size)
                texts.append(level.text)
                source[row, j] = size
                size += 1
        groups = tuple((np.array(numbers, dtype=np.int64), TermIndex.of(texts))
                       for numbers, texts in by_tenant.values())
        return cls(groups, source, size)

    def similarity(self, query: str, scorer: str) -> np.ndarray:
        """The scorer's similarity of every record's every level to ``query`` (n, k); scorer
        ``matched``: the share of the query's terms each level holds."""
        out = np.zeros(self.size)
        for numbers, index in self.groups:
            out[numbers] = (index.bm25(query) if scorer == "bm25" else index.matched(query) if scorer == "matched"
                            else index.tfidf(query))
        return out[self.source]


def neighbours(columns: Any) -> tuple[np.ndarray, np.ndarray]:
    """Each row's previous and next row in its tenant's session, in input order (-1: none)."""
    n = len(columns)
    tenant, session = columns.tenant.codes, columns.session.codes
    order = np.lexsort((np.arange(n), session, tenant))
    same = (tenant[order][1:] == tenant[order][:-1]) & (session[order][1:] == session[order][:-1])
    before, after = np.full(n, -1), np.full(n, -1)
    before[order[1:][same]] = order[:-1][same]
    after[order[:-1][same]] = order[1:][same]
    return before, after


def features(
    similarity: np.ndarray,
    tokens: np.ndarray,
    present: np.ndarray,
    age: np.ndarray,
    external: np.ndarray,
    extra: np.ndarray | None = None,
) -> np.ndarray:
    """The features (n, k, len(FEATURES)) of the candidate rows' levels: ``similarity`` and
    ``tokens`` (n, k), ``present`` the offered levels, ``age`` (n,) in the model's units,
    ``external`` (n,), ``extra`` (n, k, len(EXTRA)) the features after ``external`` (zeros when None).
    Gap and rank are taken over the offered levels only."""
    n, k = similarity.shape
    x = np.zeros((n, k, len(FEATURES)))
    if n == 0 or k == 0:
        return x
    offered = similarity[present]
    best = float(offered.max()) if offered.size else 0.0
    ranked = np.sort(offered)[::-1]
    # rank = 1 + how many offered levels score strictly higher (ties share the better rank)
    rank = 1 + np.searchsorted(-ranked, -similarity, side="left")
    x[..., 0] = similarity
    x[..., 1] = similarity - best
    x[..., 2] = np.log(rank)
    x[..., 3] = np.log1p(tokens)
    x[..., 4] = np.log1p(np.maximum(age, 0.0))[:, None]
    x[..., 5] = external[:, None]
    if extra is not None:
        x[..., 6:] = extra
    return x


@dataclass(frozen=True)
class LevelUtility:
    """One level's modelled utility, as the trace shows it."""

    level: str
    features: Mapping[str, float]
    p: float
    utility: float

    def to_dict(self) -> dict[str, Any]:
        return {"level": self.level, "features": dict(self.features), "p": self.p, "utility": self.utility}


@dataclass(frozen=True)
class Modelled:
    """How a record's utilities came from the utility model: per offered level its features,
    p = σ(β·x + b) and the utility (p · retention)."""

    model: UtilityModel
    levels: tuple[LevelUtility, ...]

    def to_dict(self) -> dict[str, Any]:
        model = {"features": list(self.model.features), "coef": list(self.model.coef),
                 "intercept": self.model.intercept}
        return {"from": "relevance", "model": model, "levels": [lv.to_dict() for lv in self.levels]}


# --- fitting ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Fit:
    """A fitted logistic regression: raw-unit coefficients, the standardisation it ran under."""

    coef: tuple[float, ...]
    intercept: float
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    iterations: int


def fit(x: np.ndarray, y: np.ndarray, ridge: float = 1e-4, max_iter: int = 100, tol: float = 1e-10) -> Fit:
    """Logistic regression of ``y`` (0/1) on ``x`` (m, f): features standardised (mean 0, sd 1;
    a constant feature gets coefficient 0), Newton steps on the mean log-loss plus
    ``ridge``/2·|β|² (not on the intercept), until the step is below ``tol``. Deterministic:
    plain float64 arithmetic in a fixed order."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    m, f = x.shape
    if m == 0:
        raise ValueError("no examples to fit")
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    constant = scale <= 1e-12 * np.maximum(1.0, np.abs(mean))
    scale = np.where(constant, 1.0, scale)
    z = (x - mean) / scale
    z[:, constant] = 0.0
    a = np.hstack([np.ones((m, 1)), z])
    w = np.zeros(f + 1)
    prior = np.full(f + 1, ridge)
    prior[0] = 0.0
    iterations = 0
    for iterations in range(1, max_iter + 1):  # noqa: B007 (the count is reported)
        p = sigmoid(a @ w)
        grad = a.T @ (p - y) / m + prior * w
        hess = (a * (p * (1 - p))[:, None]).T @ a / m + np.diag(prior + 1e-12)
        step = np.linalg.solve(hess, grad)
        w = w - step
        if float(np.max(np.abs(step))) < tol:
            break
    beta = np.where(constant, 0.0, w[1:] / scale)
    intercept = float(w[0] - beta @ mean)
    return Fit(tuple(float(b) for b in beta), intercept, tuple(mean.tolist()), tuple(scale.tolist()), iterations)


def age_units(age: np.ndarray, time_kind: str) -> np.ndarray:
    """Ages in the model's unit: hours for RFC 3339 times, the records' own units otherwise."""
    return age / HOUR if time_kind == "rfc3339" else age


@dataclass(frozen=True, eq=False)
class ModelInputs:
    """What the utility model reads about every row of the table (DESIGN §11): each level's
    similarity to the query on its own text, each record's age and external score."""

    model: UtilityModel
    similarity: np.ndarray  # (N, k)
    age: np.ndarray  # (N,) in the model's units
    external: np.ndarray  # (N,)
    retention: Mapping[str, float] = field(default_factory=dict)
    extra: np.ndarray | None = None  # (N, k, len(EXTRA)): the features after external, when the model reads them


def model_inputs(model: UtilityModel, columns: Any, levels: Sequence[str], query: str, scorer: str, now: float,
                 time_kind: str, retention: Mapping[str, float]) -> ModelInputs:
    """The :class:`ModelInputs` of every row of ``columns`` for one query: the level index and
    the external scores are built once per record set (kept between turns)."""
    index = columns.memo(("level-index", tuple(levels)), lambda: LevelIndex.of(columns.records, levels))
    external = columns.memo(("external-score",), lambda: np.array(
        [0.0 if r.score is None else r.score for r in columns.records], dtype=np.float64))
    age = age_units(np.maximum(now - columns.timestamp, 0.0), time_kind)
    scored: dict[str, np.ndarray] = {}

    def by(name: str) -> np.ndarray:  # each scorer once per query
        if name not in scored:
            scored[name] = index.similarity(query, name)
        return scored[name]

    similarity = by(scorer)
    extra = None
    if any(f in EXTRA for f in model.features):
        extra = np.zeros(similarity.shape + (len(EXTRA),))
        for e, name in enumerate(EXTRA):
            if name not in model.features:
                continue
            if name == "neighbour":
                before, after = columns.memo(("neighbours",), lambda: neighbours(columns))
                best = np.append(similarity.max(axis=1), 0.0)  # row -1 reads the appended 0
                extra[..., e] = np.maximum(best[before], best[after])[:, None]
            else:
                extra[..., e] = by(name)
    return ModelInputs(model, similarity, age, external, retention, extra)
