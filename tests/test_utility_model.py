"""The utility model (DESIGN §11): features per level, p in (0, 1), monotone in each feature by the
sign of its coefficient, the trace, per-level scoring, and the logistic fit."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import memsolve
from memsolve import pipeline
from memsolve.policies.model import RelevanceRule
from memsolve.relevance import TermIndex, record_text
from memsolve.utility_model import DEFAULT_MODEL, FEATURES, LevelIndex, UtilityModel, features, fit, sigmoid

from .conftest import make_policy, solve
from .policies.test_columns import NOW, WORDS, a_record
from .policies.test_columns import RULES as COLUMN_RULES

Q = "database timeout deploy"
POLICY = """\
budget: {tokens: %d}
fidelity: [raw, summary]
utility: {from: relevance, model: %s}
solver: {engine: dp, cross_check: none}
"""
RULES = "- relevance: {scorer: bm25}\n"


def model_policy(budget: int = 100, model: str = "default", retention: str = "") -> memsolve.Policy:
    body = POLICY % (budget, model)
    if retention:
        body = body.replace("utility: {", f"utility: {{retention: {retention}, ")
    return make_policy(body, rules=RULES)


def records() -> list[dict]:
    return [
        {"id": "long", "timestamp": 1, "text": "the database timed out right after the deploy on monday morning",
         "representations": {"raw": {}, "summary": {"text": "database timeout after deploy"}}},
        {"id": "short", "timestamp": 2, "text": "database deploy", "score": 0.5},
        {"id": "other", "timestamp": 3, "text": "lunch with the team", "tenant": "t2"},
    ]


# --- the model ---------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-50, 50), min_size=len(FEATURES), max_size=len(FEATURES)),
       st.floats(-20, 20), st.integers(0, len(FEATURES) - 1), st.floats(0.01, 5))
def test_probability_is_in_0_1_and_moves_with_each_features_sign(x, intercept, feature, step) -> None:
    coef = tuple(float(c) for c in np.linspace(-2, 2, len(FEATURES)))
    model = UtilityModel(FEATURES, coef, intercept)
    base = np.array(x)
    moved = base.copy()
    moved[feature] += step
    p, q = float(model.probability(base)), float(model.probability(moved))
    assert 0.0 < p < 1.0 or abs(model.logit(base)) > 30  # σ reaches 0 or 1 only in floating point
    if coef[feature] > 0:
        assert q >= p
    elif coef[feature] < 0:
        assert q <= p
    else:
        assert q == p


def test_sigmoid_never_overflows() -> None:
    z = np.array([-1e4, -40.0, 0.0, 40.0, 1e4])
    out = sigmoid(z)
    assert out[2] == 0.5 and np.all(np.isfinite(out)) and np.all(np.diff(out) >= 0)


def test_a_model_needs_known_features_and_one_coefficient_each() -> None:
    with pytest.raises(ValueError, match="unknown utility feature"):
        UtilityModel(("score", "shoe_size"), (1.0, 1.0), 0.0)
    with pytest.raises(ValueError, match="one coefficient per feature"):
        UtilityModel(("score",), (1.0, 2.0), 0.0)


def test_the_default_model_weighs_length_and_documents_its_fit() -> None:
    assert "log_tokens" in DEFAULT_MODEL.features
    assert DEFAULT_MODEL.coef[DEFAULT_MODEL.features.index("log_tokens")] > 0
    assert DEFAULT_MODEL.fitted["queries"] > 0 and "method" in DEFAULT_MODEL.fitted


def test_features_by_hand() -> None:
    similarity = np.array([[0.5, 1.0], [0.25, 0.0]])
    tokens = np.array([[9, 3], [4, 0]])
    present = np.array([[True, True], [True, False]])
    x = features(similarity, tokens, present, np.array([2.0, 0.0]), np.array([0.0, 0.75]))
    col = {f: i for i, f in enumerate(FEATURES)}
    assert x[0, 0, col["gap"]] == -0.5 and x[0, 1, col["gap"]] == 0.0
    assert x[0, 1, col["log_rank"]] == 0.0 and x[0, 0, col["log_rank"]] == pytest.approx(math.log(2))
    assert x[1, 0, col["log_rank"]] == pytest.approx(math.log(3))
    assert x[0, 0, col["log_tokens"]] == pytest.approx(math.log(10))
    assert x[0, 1, col["log_age"]] == pytest.approx(math.log(3))
    assert x[1, 0, col["external"]] == 0.75


# --- the fit -------------------------------------------------------------------------------------


def synthetic(seed: int, m: int = 40_000) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(m, 3)) * np.array([1.0, 3.0, 0.5]) + np.array([0.0, 2.0, -1.0])
    beta, intercept = np.array([1.5, -0.4, 2.0]), -1.0
    y = (rng.random(m) < sigmoid(x @ beta + intercept)).astype(float)
    return x, y, beta, intercept


def test_fit_recovers_known_coefficients() -> None:
    x, y, beta, intercept = synthetic(7)
    found = fit(x, y, ridge=0.0)
    assert np.allclose(found.coef, beta, atol=0.08)
    assert found.intercept == pytest.approx(intercept, abs=0.1)
    assert found.iterations < 30


def test_fit_matches_the_maximum_likelihood_optimum() -> None:
    """At the optimum the log-likelihood's gradient vanishes: Σ (y − p)·x = 0 for every column."""
    x, y, _, _ = synthetic(3, 5_000)
    found = fit(x, y, ridge=0.0)
    p = sigmoid(x @ np.array(found.coef) + found.intercept)
    assert np.abs(np.hstack([np.ones((len(y), 1)), x]).T @ (y - p) / len(y)).max() < 1e-8


def test_fit_is_deterministic_to_the_bit_and_ignores_constant_features() -> None:
    x, y, _, _ = synthetic(5, 3_000)
    x = np.hstack([x, np.full((len(y), 1), 4.0)])
    first, second = fit(x, y), fit(x.copy(), y.copy())
    assert first == second
    assert first.coef[-1] == 0.0


# --- per-level scoring, the trace ----------------------------------------------------------------


def test_a_level_is_scored_on_its_own_text_within_its_tenant() -> None:
    recs = memsolve.load_records(records()).records
    index = LevelIndex.of(recs, ("raw", "summary"))
    sim = index.similarity(Q, "tfidf")
    # tenant-free records form one group; the other tenant's record is indexed on its own
    own = TermIndex.of(["the database timed out right after the deploy on monday morning",
                        "database timeout after deploy", "database deploy"]).tfidf(Q)
    assert sim[0, 0] == pytest.approx(own[0]) and sim[0, 1] == pytest.approx(own[1])
    assert sim[1, 0] == sim[1, 1] == pytest.approx(own[2])  # a level without text reads its record's
    assert sim[2, 0] == 0.0


def test_the_trace_shows_features_p_and_utility_per_level() -> None:
    result = solve(model_policy(retention="{summary: 0.5}"), records(), now=10, query=Q)
    entry = json.loads(result.to_json())
    trace = {e["id"]: e for e in entry["trace"]}
    derived = trace["long"]["derived_utility"]
    assert derived["from"] == "relevance"
    assert derived["model"]["features"] == list(DEFAULT_MODEL.features)
    by_level = {lv["level"]: lv for lv in derived["levels"]}
    assert set(by_level) == {"raw", "summary"}
    for level, kept in (("raw", 1.0), ("summary", 0.5)):
        lv = by_level[level]
        z = sum(c * lv["features"][f] for f, c in zip(DEFAULT_MODEL.features, DEFAULT_MODEL.coef, strict=True))
        assert lv["p"] == pytest.approx(1 / (1 + math.exp(-(z + DEFAULT_MODEL.intercept))))
        assert 0 < lv["p"] < 1 and lv["utility"] == pytest.approx(kept * lv["p"])
    assert by_level["summary"]["features"]["log_tokens"] == pytest.approx(math.log(5))


def test_features_are_computed_within_the_tenant() -> None:
    """Another tenant's records change no feature (gap, rank, idf): they are only counted."""
    mine = [{**r, "tenant": "a"} for r in records()[:2]]
    theirs = [{"id": f"b{i}", "timestamp": 5, "text": "database database timeout", "tenant": "b"} for i in range(5)]
    policy = make_policy("tenant: a\n" + POLICY % (100, "default"), rules=RULES)
    alone = solve(policy, mine, now=10, query=Q)
    crowded = solve(policy, mine + theirs, now=10, query=Q)
    assert [e.to_dict() for e in alone.trace] == [e.to_dict() for e in crowded.trace]
    assert all(not e.id.startswith("b") for e in crowded.trace)


def test_the_model_reads_an_external_score() -> None:
    text = "{features: [score, external], coef: [1.0, 4.0], intercept: -3.0}"
    result = solve(model_policy(model=text), records(), now=10, query=Q)
    trace = {e.id: e.to_dict() for e in result.trace}
    short = trace["short"]["derived_utility"]["levels"][0]
    assert short["features"]["external"] == 0.5
    long_ = trace["long"]["derived_utility"]["levels"][0]
    assert long_["features"]["external"] == 0.0


def test_a_shorter_level_matching_better_can_win() -> None:
    """At a budget the raw text does not fit, the summary's own text is what gets chosen."""
    result = solve(model_policy(budget=6), records()[:2], now=10, query=Q)
    assert {s.id: s.level for s in result.selected}.get("long") == "summary"


def test_without_a_model_utilities_are_the_old_exponential() -> None:
    body = "budget: {tokens: 100}\nutility: {from: relevance}\nsolver: {engine: dp, cross_check: none}\n"
    result = solve(make_policy(body, rules=RULES), records()[:2], now=10, query=Q)
    derived = {e.id: e.to_dict().get("derived_utility") for e in result.trace}
    assert derived["long"] is not None and "temperature" in derived["long"]


def test_a_model_block_with_the_wrong_number_of_coefficients_is_located() -> None:
    with pytest.raises(memsolve.InputError, match="expected 2 coefficients") as info:
        model_policy(model="{features: [score, log_tokens], coef: [1.0], intercept: 0}")
    assert info.value.location.line is not None


# --- compile with a model, against a record-by-record oracle ---------------------------------------

ORACLE_MODEL = UtilityModel(FEATURES, (1.5, 0.5, -0.7, 0.3, -0.2, 2.0, 0.8, 1.1, 0.6, 0.9), -1.25)


@st.composite
def a_model_case(draw: st.DrawFn) -> tuple:
    """Records as the columns oracle draws them; a relevance rule, a query, and maybe other rules."""
    records = [draw(a_record(i)) for i in range(draw(st.integers(1, 14)))]
    for item in records:
        item["timestamp"] = min(item["timestamp"], NOW)
        if draw(st.booleans()):
            item["score"] = draw(st.sampled_from([0, 0.25, 1]))
    others = draw(st.lists(st.sampled_from(["stores", "freshness", "latest", "authority"]), max_size=2, unique=True))
    scorer = draw(st.sampled_from(["tfidf", "bm25"]))
    body = f"budget: {{tokens: {draw(st.integers(0, 12))}}}\nfidelity: [raw, summary, keywords]\n"
    body += "stores: [semantic, episodic, working]\non_invalid_record: exclude\n"
    if draw(st.booleans()):
        body += "tenant: a\n"
    if draw(st.booleans()):
        body += "utility: {from: relevance, retention: {summary: 0.5}}\n"
    rules = "\n".join([COLUMN_RULES[name] for name in others] + [COLUMN_RULES[scorer]]) + "\n"
    policy = make_policy(body, rules=rules)
    query = " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=3)))
    return policy, memsolve.load_records(records), memsolve.Context(now=NOW, session="s1", query=query)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(a_model_case())
def test_compile_with_a_model_is_the_oracles(case) -> None:
    policy, records, context = case
    policy = replace(policy, utility=replace(policy.utility, source="relevance", model=ORACLE_MODEL))
    prep = pipeline.prepare(policy, records, context)
    got = prep.compiled
    assert got.model is not None
    cols = prep.judgement.columns
    eligible = np.flatnonzero(prep.judgement.eligible).tolist()
    expected = _model_oracle(policy, cols.records, eligible, context.query, NOW, got.instance.mask)
    assert got.instance.utility.shape == expected.shape
    assert np.allclose(got.instance.utility, expected, rtol=1e-12, atol=1e-15)


def _model_oracle(policy, records, eligible, query, now, mask):
    """Features, p and utilities record by record, then the monotone repair."""
    scorer = [r for r in policy.rules if isinstance(r, RelevanceRule)][-1].scorer
    levels = policy.fidelity
    # the documents per tenant: each record's text, and each level's own text where it differs
    docs: dict = {}
    for i, record in enumerate(records):
        own = record_text(record)
        docs.setdefault(record.tenant, []).append((i, None, own))
        for level in record.levels:
            if level.text is not None and level.text != own:
                docs[record.tenant].append((i, level.name, level.text))
    sims: dict = {}
    for group in docs.values():
        index = TermIndex.of([text for _, _, text in group])
        found = {name: getattr(index, name)(query) for name in ("tfidf", "bm25", "matched")}
        for d, (i, name, _) in enumerate(group):
            sims[(i, name)] = {key: float(found[key][d]) for key in found}

    def sim(i, name, kind):
        return sims.get((i, name), sims[(i, None)])[kind]

    def best_of(i):
        return max(sim(i, name, scorer) for name in (None, *levels))

    def neighbour(i):
        same = [j for j, r in enumerate(records)
                if r.tenant == records[i].tenant and r.session == records[i].session]
        at = same.index(i)
        near = [same[at - 1]] if at > 0 else []
        near += [same[at + 1]] if at + 1 < len(same) else []
        return max((best_of(j) for j in near), default=0.0)

    offered = [sim(i, levels[j], scorer) for r, i in enumerate(eligible) for j in range(len(levels)) if mask[r, j]]
    best = max(offered, default=0.0)
    utility = np.zeros(mask.shape)
    for r, i in enumerate(eligible):
        record = records[i]
        by_name = {level.name: level for level in record.levels}
        for j, name in enumerate(levels):
            level = by_name.get(name)
            if level is None:
                continue
            if level.utility is not None:
                utility[r, j] = level.utility
                continue
            s = sim(i, name, scorer)
            text = level.text if level.text is not None else record.text or ""
            tokens = level.tokens if level.tokens is not None else len(text.split())
            x = {"score": s, "gap": s - best, "log_rank": math.log(1 + sum(o > s for o in offered)),
                 "log_tokens": math.log1p(tokens), "log_age": math.log1p(max(now - record.timestamp, 0)),
                 "external": record.score or 0.0, "tfidf": sim(i, name, "tfidf"), "bm25": sim(i, name, "bm25"),
                 "matched": sim(i, name, "matched"), "neighbour": neighbour(i)}
            z = sum(c * x[f] for f, c in zip(ORACLE_MODEL.features, ORACLE_MODEL.coef, strict=True))
            p = 1 / (1 + math.exp(-(z + ORACLE_MODEL.intercept)))
            utility[r, j] = policy.utility.retention.get(name, 1.0) * p
        running = -math.inf
        for j in range(len(levels) - 1, -1, -1):
            if mask[r, j]:
                utility[r, j] = max(utility[r, j], running)
                running = utility[r, j]
    return utility


def test_a_record_whose_only_matching_text_is_a_levels_is_eligible_with_a_model() -> None:
    facts = [{"id": "turn", "timestamp": 1, "text": "yes we finally fixed it last night",
              "representations": {"raw": {}, "summary": {"text": "the database timeout was fixed"}}}]
    with_model = solve(model_policy(budget=10), facts, now=10, query=Q)
    assert {s.id: s.level for s in with_model.selected} == {"turn": "summary"}
    verdict = with_model.entry("turn").rules[-1]
    assert verdict.passed and "a level's own text matches" in verdict.reason
    body = "budget: {tokens: 10}\nfidelity: [raw, summary]\nutility: {from: relevance}\n"
    without = solve(make_policy(body, rules=RULES), facts, now=10, query=Q)
    assert [e.id for e in without.excluded] == ["turn"]  # the old rule reads the record's text only


def test_a_policy_with_a_model_scores_with_bm25_unless_it_names_a_scorer() -> None:
    body = "utility: {from: relevance, model: default}\n"
    assert make_policy(body, rules="- relevance: {}\n").rules[0].scorer == "bm25"
    assert make_policy(body, rules="- relevance: {scorer: tfidf}\n").rules[0].scorer == "tfidf"
    assert make_policy("utility: {from: relevance}\n", rules="- relevance: {}\n").rules[0].scorer == "tfidf"


def test_a_model_without_from_relevance_is_located() -> None:
    with pytest.raises(memsolve.InputError, match="add `from: relevance`") as info:
        make_policy("utility: {model: default}\n", rules=RULES)
    assert info.value.location.line is not None
