"""Lexical relevance: TF-IDF cosine (or BM25) blended with recency, vectorised with numpy.

Score = (1 − w)·cos + w·2^(−age/half_life). Text is lower-cased and split on non-alphanumeric
characters; words in :data:`STOP_WORDS` are dropped. TF-IDF uses log term frequency
(1 + ln tf) and smoothed idf ln((1 + N)/(1 + df)) + 1 over the records of the same tenant.
A record sharing no term with the query (cosine 0) fails the rule whatever its recency.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .records import Record

if TYPE_CHECKING:
    from .policies.model import RelevanceRule
    from .policies.rules import Verdict, _Evaluator

STOP_WORDS = frozenset(
    """a about after all also an and any are as at be been before but by can did do does for
    from had has have he her his how i if in into is it its me my no not of on or our she so
    than that the their them then there these they this to up was we were what when where which
    who why will with would you your""".split()
)
_WORD = re.compile(r"[a-z0-9]+")


def terms(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in STOP_WORDS]


def record_text(record: Record) -> str:
    if record.text is not None:
        return record.text
    return next((level.text for level in record.levels if level.text), "")


def tfidf_cosine(query: str, documents: Sequence[str]) -> np.ndarray:
    """Cosine between the query and each document under log-tf, smoothed-idf weights."""
    vocab: dict[str, int] = {}
    docs = [terms(d) for d in documents]
    for words in docs:
        for w in words:
            vocab.setdefault(w, len(vocab))
    n = len(docs)
    if n == 0 or not vocab:
        return np.zeros(n)
    counts = np.zeros((n, len(vocab)))
    for row, words in enumerate(docs):
        for w in words:
            counts[row, vocab[w]] += 1
    df = (counts > 0).sum(axis=0)
    idf = np.log((1 + n) / (1 + df)) + 1
    weights = np.where(counts > 0, 1 + np.log(np.maximum(counts, 1)), 0.0) * idf
    q = np.zeros(len(vocab))
    for w in terms(query):
        if w in vocab:
            q[vocab[w]] += 1
    q = np.where(q > 0, 1 + np.log(np.maximum(q, 1)), 0.0) * idf
    norms = np.linalg.norm(weights, axis=1) * np.linalg.norm(q)
    dots = weights @ q
    return np.divide(dots, norms, out=np.zeros(n), where=norms > 0)


def bm25(query: str, documents: Sequence[str], k1: float = 1.5, b: float = 0.75) -> np.ndarray:
    """Okapi BM25 scores normalised to [0, 1] by the best score (0 when nothing matches)."""
    docs = [terms(d) for d in documents]
    n = len(docs)
    if n == 0:
        return np.zeros(0)
    lengths = np.array([len(d) for d in docs], dtype=float)
    avg = lengths.mean() or 1.0
    scores = np.zeros(n)
    for w in set(terms(query)):
        tf = np.array([d.count(w) for d in docs], dtype=float)
        df = float((tf > 0).sum())
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        scores += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * lengths / avg))
    top = scores.max()
    return scores / top if top > 0 else scores


def relevance_check(ev: _Evaluator, rule: RelevanceRule, records: Sequence[Record]) -> Callable[[Record], Verdict]:
    from .policies.rules import Verdict, number

    query = ev.ctx.query
    if not query:
        def no_query(record: Record) -> Verdict:
            return Verdict(rule.id, True, "no query given; relevance not applied", {"query": None})
        return no_query

    half_life = ev.duration(rule.half_life) if rule.half_life is not None else (
        24.0 if ev.ctx.time_kind == "number" else 24 * 3600.0
    )
    by_tenant: dict[Any, list[Record]] = defaultdict(list)
    for record in records:
        by_tenant[record.tenant].append(record)
    similarity: dict[str, float] = {}
    score_fn = bm25 if rule.scorer == "bm25" else tfidf_cosine
    for group in by_tenant.values():
        values = score_fn(query, [record_text(r) for r in group])
        similarity.update({r.id: float(v) for r, v in zip(group, values, strict=True)})
    w = rule.recency_weight

    def check(record: Record) -> Verdict:
        cos = similarity[record.id]
        age = max(ev.ctx.now - record.timestamp, 0.0)
        recency = 2.0 ** (-age / half_life) if half_life > 0 else 0.0
        score = (1 - w) * cos + w * recency
        evidence = {"query": query, "scorer": rule.scorer, "similarity": round(cos, 12),
                    "recency": round(recency, 12), "recency_weight": number(w), "score": round(score, 12)}
        if cos <= 0:
            return Verdict(rule.id, False, "shares no term with the query", evidence)
        return Verdict(rule.id, True, f"matches the query (similarity {cos:.3f}, score {score:.3f})", evidence)

    return check
