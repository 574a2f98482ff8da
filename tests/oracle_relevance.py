"""The test oracle: relevance scoring as it was before the term index, dense and per call.

tests/test_relevance.py checks memsolve.relevance.RelevanceIndex against it on random texts.
The original module's docstring follows.

Lexical relevance: TF-IDF cosine (or BM25) blended with recency, vectorised with numpy.

Score = (1 − w)·cos + w·2^(−age/half_life). Text is lower-cased and split on non-alphanumeric
characters; words in :data:`STOP_WORDS` are dropped. TF-IDF uses log term frequency
(1 + ln tf) and smoothed idf ln((1 + N)/(1 + df)) + 1 over the records of the same tenant.
Scores are values (:class:`Relevance`); utilities derive from the score at 12 decimal places,
the resolution the evidence shows, so a person reads exactly the number that was used. The relevance rule
(:mod:`memsolve.policies.rules`) judges records with them.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from memsolve.records import Record
from memsolve.relevance import STOP_WORDS, record_text, terms  # noqa: F401  (the one tokenizer)


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


@dataclass(frozen=True)
class Relevance:
    """One record's relevance to the query: similarity, recency and their blend."""

    similarity: float
    recency: float
    score: float

    @property
    def value(self) -> float:
        """The score at the evidence's resolution (12 decimals): the number utilities derive from."""
        return round(self.score, 12)


def score_records(
    query: str, records: Sequence[Record], now: float, half_life: float, recency_weight: float, scorer: str
) -> list[Relevance]:
    """Each record's relevance (input order); similarity is computed within each tenant's records."""
    by_tenant: dict[Any, list[int]] = defaultdict(list)
    for index, record in enumerate(records):
        by_tenant[record.tenant].append(index)
    similarity = [0.0] * len(records)
    score_fn = bm25 if scorer == "bm25" else tfidf_cosine
    for group in by_tenant.values():
        values = score_fn(query, [record_text(records[i]) for i in group])
        for i, value in zip(group, values.tolist(), strict=True):
            similarity[i] = value
    w = recency_weight
    out = []
    for record, cos in zip(records, similarity, strict=True):
        age = max(now - record.timestamp, 0.0)
        recency = 2.0 ** (-age / half_life) if half_life > 0 else 0.0
        out.append(Relevance(cos, recency, (1 - w) * cos + w * recency))
    return out
