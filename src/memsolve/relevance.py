"""Lexical relevance: TF-IDF cosine (or BM25) blended with recency, over a term index.

Score = (1 − w)·cos + w·2^(−age/half_life). Text is lower-cased and split on non-alphanumeric
characters; words in :data:`STOP_WORDS` are dropped. TF-IDF uses log term frequency
(1 + ln tf) and smoothed idf ln((1 + N)/(1 + df)) + 1 over the records of the same tenant.
Scores are values (:class:`Relevance`); utilities derive from the score at 12 decimal places,
the resolution the evidence shows, so a person reads exactly the number that was used. The relevance rule
(:mod:`memsolve.policies.rules`) judges records with them.

The records' terms are indexed once (:class:`TermIndex`: vocabulary, postings, document
frequencies, lengths) and kept with the record set between turns; a query reads only the
postings of its own terms.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .records import Record

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


@dataclass(frozen=True, eq=False)
class TermIndex:
    """A set of documents' terms: vocabulary, postings (documents and counts per term), document
    frequencies, lengths, and each document's TF-IDF norm."""

    vocabulary: dict[str, int]
    docs: list[np.ndarray]  # per term: the documents holding it (ascending)
    counts: list[np.ndarray]  # per term: how often each of those holds it
    lengths: np.ndarray  # terms per document
    idf: np.ndarray  # smoothed TF-IDF idf per term
    norms: np.ndarray  # per document: the norm of its log-tf · idf weights

    @classmethod
    def of(cls, documents: Sequence[str]) -> TermIndex:
        vocabulary: dict[str, int] = {}
        docs: list[list[int]] = []
        counts: list[list[int]] = []
        lengths = np.zeros(len(documents))
        for row, text in enumerate(documents):
            words = terms(text)
            lengths[row] = len(words)
            for word, count in Counter(words).items():
                term = vocabulary.setdefault(word, len(vocabulary))
                if term == len(docs):
                    docs.append([])
                    counts.append([])
                docs[term].append(row)
                counts[term].append(count)
        n = len(documents)
        df = np.array([len(d) for d in docs], dtype=float)
        idf = np.log((1 + n) / (1 + df)) + 1
        postings = [np.array(d, dtype=np.int64) for d in docs]
        tallies = [np.array(c, dtype=float) for c in counts]
        squares = np.zeros(n)
        for term, (rows, tf) in enumerate(zip(postings, tallies, strict=True)):
            squares[rows] += ((1 + np.log(tf)) * idf[term]) ** 2
        return cls(vocabulary, postings, tallies, lengths, idf, np.sqrt(squares))

    def __len__(self) -> int:
        return len(self.lengths)

    def tfidf(self, query: str) -> np.ndarray:
        """Cosine between the query and each document under log-tf, smoothed-idf weights."""
        n = len(self)
        asked = {self.vocabulary[w]: c for w, c in sorted(Counter(terms(query)).items()) if w in self.vocabulary}
        if n == 0 or not asked:
            return np.zeros(n)
        dots = np.zeros(n)
        q_squares = 0.0
        for term, count in asked.items():
            weight = (1 + math.log(count)) * float(self.idf[term])
            q_squares += weight * weight
            dots[self.docs[term]] += (1 + np.log(self.counts[term])) * self.idf[term] * weight
        norms = self.norms * math.sqrt(q_squares)
        return np.divide(dots, norms, out=np.zeros(n), where=norms > 0)

    def matched(self, query: str) -> np.ndarray:
        """The share of the query's distinct terms each document holds."""
        words = sorted(set(terms(query)))
        out = np.zeros(len(self))
        for word in words:
            term = self.vocabulary.get(word)
            if term is not None:
                out[self.docs[term]] += 1
        return out / len(words) if words else out

    def bm25(self, query: str, k1: float = 1.5, b: float = 0.75) -> np.ndarray:
        """Okapi BM25 scores normalised to [0, 1] by the best score (0 when nothing matches)."""
        n = len(self)
        scores = np.zeros(n)
        if n == 0:
            return scores
        avg = self.lengths.mean() or 1.0
        for word in sorted(set(terms(query))):
            term = self.vocabulary.get(word)
            if term is None:
                continue
            rows, tf = self.docs[term], self.counts[term]
            idf = math.log(1 + (n - len(rows) + 0.5) / (len(rows) + 0.5))
            scores[rows] += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * self.lengths[rows] / avg))
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


@dataclass(frozen=True, eq=False)
class Scores:
    """Every record's relevance to one query, as arrays; :meth:`at` gives one as a value."""

    similarity: np.ndarray
    recency: np.ndarray
    score: np.ndarray
    value: np.ndarray  # the score at 12 decimals (Relevance.value)

    def at(self, row: int) -> Relevance:
        return Relevance(float(self.similarity[row]), float(self.recency[row]), float(self.score[row]))


@dataclass(frozen=True, eq=False)
class RelevanceIndex:
    """The records' term index, one per tenant (similarity is computed within each tenant's records)."""

    groups: tuple[tuple[np.ndarray, TermIndex], ...]  # (rows, index) per tenant
    timestamps: np.ndarray

    @classmethod
    def of(cls, records: Sequence[Record]) -> RelevanceIndex:
        by_tenant: dict[str | None, list[int]] = {}
        for row, record in enumerate(records):
            by_tenant.setdefault(record.tenant, []).append(row)
        groups = tuple((np.array(rows, dtype=np.int64), TermIndex.of([record_text(records[i]) for i in rows]))
                       for rows in by_tenant.values())
        return cls(groups, np.array([r.timestamp for r in records], dtype=np.float64))

    def score(self, query: str, now: float, half_life: float, recency_weight: float, scorer: str) -> Scores:
        """Each record's relevance: (1 − w)·similarity + w·2^(−age/half_life)."""
        similarity = np.zeros(len(self.timestamps))
        for rows, index in self.groups:
            similarity[rows] = index.bm25(query) if scorer == "bm25" else index.tfidf(query)
        age = np.maximum(now - self.timestamps, 0.0)
        recency = 2.0 ** (-age / half_life) if half_life > 0 else np.zeros(len(age))
        w = recency_weight
        score = (1 - w) * similarity + w * recency
        # Python's round (correctly rounded), as Relevance.value: numpy's round may differ in the last digit
        value = np.array([round(s, 12) for s in score.tolist()], dtype=np.float64)
        return Scores(similarity, recency, score, value)
