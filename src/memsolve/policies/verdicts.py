"""What the rules stage hands on: one verdict per rule per record, with its evidence.

Also the fidelity ceiling a stateful round feeds into the rules (the highest level a record
may still take), and :func:`number`, the way numbers are written into evidence.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from ..columns import Columns, groups
from ..records import Record

T = TypeVar("T")


def number(value: float) -> float | int:
    """Integral floats as ints, so evidence reads `age: 1` rather than `age: 1.0`."""
    if type(value) is int:
        return value
    return int(value) if value.is_integer() and -(2**53) < value < 2**53 else value


@dataclass(frozen=True)
class Verdict:
    """One rule's judgement of one record.

    ``score`` is the relevance rule's blended score as a value (the evidence shows the same
    number); the allocation derives utilities from it, never from the evidence text.
    """

    rule: str
    passed: bool
    reason: str
    evidence: Mapping[str, Any]
    score: float | None = field(default=None, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The verdict as plain data; its evidence a copy (rows that read the same share one
        verdict: a caller's edit of one row's evidence must not reach the others)."""
        return {"rule": self.rule, "passed": self.passed, "reason": self.reason, "evidence": _copy(self.evidence)}


def _copy(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: _copy(item) for key, item in value.items()}
    return [_copy(item) for item in value] if isinstance(value, list) else value


@dataclass(frozen=True)
class RecordVerdicts:
    """Every verdict on one record, in evaluation order."""

    record: Record
    verdicts: tuple[Verdict, ...]

    @property
    def eligible(self) -> bool:
        return all(v.passed for v in self.verdicts)

    @property
    def deciding(self) -> Verdict | None:
        """The first failing verdict, which names the rule that excluded the record."""
        return next((v for v in self.verdicts if not v.passed), None)

    @property
    def relevance(self) -> float | None:
        """The record's relevance score (the last relevance rule's), None without a query."""
        return next((v.score for v in reversed(self.verdicts) if v.score is not None), None)


@dataclass(frozen=True)
class Ceiling:
    """The highest level a record may still take, and the round that set it (state)."""

    level: str  # a fidelity level, or DELETE
    round: int


class RuleMask:
    """One rule over every record at once: which rows pass, and the verdict of one row (its
    reason and evidence), built only when a trace, an explanation or a table asks for it.

    (RuleMask and Judgement are plain classes, compared by identity: a dataclass costs ~0.7 ms
    to create at import, in every CLI process.)"""

    __slots__ = ("rule", "passed", "explain", "scores", "reason", "shared_by", "written", "reasons", "_shared")

    def __init__(
        self,
        rule: str,
        passed: np.ndarray,  # bool, one per row
        explain: Callable[[int], Verdict],
        scores: np.ndarray | None = None,  # the relevance rule: each row's score (Verdict.score)
        # the reason alone (``explain(row).reason`` without the evidence): what a result's list of
        # excluded records shows, for a million rows at most; rules that exclude many give one
        reason: Callable[[int], str] | None = None,
        # what a row's verdict depends on besides the rule and the moment, as codes (cheap to ask
        # again: the columns keep what they derive): rows with equal codes share one verdict, so a
        # full trace of 10,000 records words a rule like `stores` a few times and writes its JSON
        # once; None where each row's is its own
        shared_by: Callable[[], np.ndarray] | None = None,
        # each row's verdict as JSON, worded for many rows at once (``verdict_json(explain(row))``
        # byte for byte; memsolve.trace_json): rules whose verdicts are mostly each row's own (latest
        # key, ages); None from it where a row must be worded on its own (a value JSON cannot hold)
        written: Callable[[np.ndarray], list[str] | None] | None = None,
        # each row's reason, worded for many rows at once (``reason`` of each, text for text): what
        # a result's list of excluded records reads, where they are many (latest key)
        reasons: Callable[[np.ndarray], list[str]] | None = None,
    ) -> None:
        self.rule, self.passed, self.explain, self.scores = rule, passed, explain, scores
        self.reason, self.shared_by, self.written, self.reasons = reason, shared_by, written, reasons
        self._shared: dict[int, Verdict] = {}

    def __repr__(self) -> str:
        return f"RuleMask({self.rule!r}, {len(self.passed)} rows)"

    def codes(self) -> np.ndarray | None:
        """One code per row, equal for rows that share a verdict; None where none do."""
        return None if self.shared_by is None else self.shared_by()

    def verdict(self, row: int) -> Verdict:
        """One row's verdict (the same object for rows that share one)."""
        codes = self.codes()
        return self.explain(row) if codes is None else self._shared_verdict(row, int(codes[row]))

    def verdicts_of(self, rows: list[int]) -> list[Verdict]:
        """The verdicts of these rows, in order."""
        codes = self.codes()
        if codes is None:
            return [self.explain(row) for row in rows]
        return list(map(self._shared_verdict, rows, codes[rows].tolist()))

    def _shared_verdict(self, row: int, code: int) -> Verdict:
        found = self._shared.get(code)
        if found is None:
            found = self._shared[code] = self.explain(row)
        return found

    def reason_of(self, row: int) -> str:
        """The reason of one row's verdict."""
        return self.reason(row) if self.reason is not None else self.explain(row).reason

    def reasons_of(self, rows: np.ndarray) -> list[str]:
        """The reasons of these rows' verdicts, in order (rows that share a verdict worded once)."""
        return self.reasons(rows) if self.reasons is not None else self.once_per_verdict(rows, self.reason_of)

    def once_per_verdict(self, rows: np.ndarray, word: Callable[[int], T]) -> list[T]:
        """``word(row)`` for each of these rows, called once for each group of rows that share a
        verdict (:meth:`codes`) and laid over the group."""
        codes = self.codes()
        if codes is None:
            return [word(row) for row in rows.tolist()]
        first, inverse = groups(codes[rows])
        texts = [word(row) for row in rows[first].tolist()]
        return [texts[at] for at in inverse.tolist()]


class Judgement:
    """Every rule over every record: the rules stage's output, kept as arrays.

    ``masks`` in evaluation order: tenant, the policy's rules, the ceiling; ``eligible``: bool,
    every rule passed; ``deciding``: int, the index in ``masks`` of the first failing rule, -1
    when eligible; ``relevance``: the last relevance rule's scores, None without a query."""

    __slots__ = ("columns", "masks", "eligible", "deciding", "relevance")

    def __init__(self, columns: Columns, masks: tuple[RuleMask, ...], eligible: np.ndarray, deciding: np.ndarray,
                 relevance: np.ndarray | None) -> None:
        self.columns, self.masks, self.eligible, self.deciding, self.relevance = (
            columns, masks, eligible, deciding, relevance)

    @classmethod
    def of(cls, columns: Columns, masks: tuple[RuleMask, ...]) -> Judgement:
        deciding = np.full(len(columns), -1)
        for index in range(len(masks) - 1, -1, -1):  # the first failing rule overwrites the later ones
            deciding[~masks[index].passed] = index
        eligible = deciding < 0
        relevance = next((m.scores for m in reversed(masks) if m.scores is not None), None)
        return cls(columns, masks, eligible, deciding, relevance)

    def verdicts(self, row: int) -> RecordVerdicts:
        """The verdicts on one row's record, every rule in evaluation order."""
        return RecordVerdicts(self.columns.records[row], tuple(m.verdict(row) for m in self.masks))

    def verdict_rows(self, rows: list[int]) -> list[tuple[Verdict, ...]]:
        """Every verdict on each of these rows (as :meth:`verdicts`), built rule by rule."""
        return list(zip(*(m.verdicts_of(rows) for m in self.masks), strict=True)) if rows else []

    def deciding_verdict(self, row: int) -> Verdict:
        """The first failing verdict of an excluded row."""
        return self.masks[int(self.deciding[row])].verdict(row)

    def deciding_reason(self, row: int) -> tuple[str, str]:
        """The first failing rule of an excluded row, and its reason."""
        mask = self.masks[int(self.deciding[row])]
        return mask.rule, mask.reason_of(row)
