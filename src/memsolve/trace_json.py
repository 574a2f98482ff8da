"""A result's trace written as JSON straight from the arrays, column by column.

Byte for byte ``json_text(entry.to_dict())`` for each trace entry (a test holds the two
together), without building the entries: each rule's verdict JSON is written once per group of
rows that share a verdict (:meth:`RuleMask.codes`) and laid over the rows by indexing; the
allocations' offers are written from the instance's arrays, their numbers by the encoder in
one call. A full trace of 10,000 records is mostly this.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .policies.verdicts import Judgement, RuleMask, Verdict
from .result import json_string, json_text
from .solver.compile import Allocations


def _strings(values: Sequence[str]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def verdict_json(verdict: Verdict) -> str:
    """``verdict.to_dict()`` as JSON, as the result's encoder writes it."""
    passed = verdict.passed
    return (f'{{"rule": {json_string(verdict.rule)}, "passed": '
            f'{"true" if passed is True else "false" if passed is False else json_text(passed)}, '
            f'"reason": {json_string(verdict.reason)}, "evidence": {json_text(verdict.evidence)}}}')


def _numbers(values: np.ndarray) -> list[str]:
    """Each number as the encoder writes it (one call for them all; finite values only)."""
    return json_text(values.tolist())[1:-1].split(", ")


def rule_texts(mask: RuleMask, rows: np.ndarray) -> np.ndarray:
    """Each row's verdict under ``mask`` as JSON (an object array)."""
    written = None if mask.written is None else mask.written(rows)
    if written is not None:
        return _strings(written)
    codes = mask.codes()
    if codes is None:
        return _strings([verdict_json(mask.explain(row)) for row in rows.tolist()])
    _, first, inverse = np.unique(codes[rows], return_index=True, return_inverse=True)
    written = _strings([verdict_json(verdict) for verdict in mask.verdicts_of(rows[first].tolist())])
    return written[inverse.ravel()]


def allocation_texts(allocations: Allocations, rows: np.ndarray) -> list[str] | None:
    """The trace's ``allocation`` member (with ``repairs`` and ``derived_utility`` where a row has
    them) of each instance row in ``rows``; None where a value is not finite (the encoder refuses
    it: the entry objects' path raises as it does)."""
    compiled = allocations.compiled
    inst, levels = compiled.instance, compiled.levels
    tokens, utility, offered = inst.tokens[rows], inst.utility[rows], inst.mask[rows]
    value = utility - inst.price * tokens
    if not (np.isfinite(utility[offered]).all() and np.isfinite(value[offered]).all()):
        return None
    names = [json_string(level) for level in levels]
    # each offered level's text, then each row's in level order (small strings: numpy joins them)
    at = np.nonzero(offered)
    cells = np.full(tokens.shape, "", dtype=object)
    if at[0].size:
        utilities = _numbers(utility[at])
        # at a price of 0 each value is its utility, bit for bit (-0.0 too): written once
        values = utilities if np.array_equal(value.view(np.int64), utility.view(np.int64)) else _numbers(value[at])
        sizes = map(int.__repr__, tokens[at].tolist())  # ints as the encoder writes them, without it
        cells[at] = [f', {{"level": {names[j]}, "tokens": {t}, "utility": {u}, "value": {v}}}'
                     for j, t, u, v in zip(at[1].tolist(), sizes, utilities, values, strict=True)]
    offers = cells.sum(axis=1).tolist() if tokens.shape[1] else [""] * len(rows)
    names.append(json_string("delete"))
    choice = allocations.choice[rows].tolist()
    searched = [None] * len(rows) if allocations.searched is None else allocations.searched[rows].tolist()
    out = []
    for row, j, offer, search in zip(rows.tolist(), choice, offers, searched, strict=True):
        text = f'{{"level": {names[j]}, "offered": [{offer[2:]}]'  # less the first separator
        if search is not None:
            text += ', "decided_by": "search"}' if search else ', "decided_by": "bound"}'
        else:
            text += "}"
        repairs, derived = compiled.repairs(row), compiled.derived(row)
        if repairs:
            text += f', "repairs": {json_text([r.to_dict() for r in repairs])}'
        if derived is not None:
            text += f', "derived_utility": {json_text(derived.to_dict())}'
        out.append(text)
    return out


def trace_lines(
    judgement: Judgement,
    allocations: Allocations,
    shown: Sequence[tuple[int, Any, int | None]],
    instance_row: np.ndarray,
    invalid_line: Callable[[int, Any], str],
) -> list[str] | None:
    """The JSON of each trace entry: ``shown`` holds (position, record, column row) in trace
    order, row None for an invalid record (``invalid_line(position, record)`` writes it);
    None where the entry objects must write it (see :func:`allocation_texts`)."""
    valid = [i for i, (_, _, row) in enumerate(shown) if row is not None]
    rows = np.array([shown[i][2] for i in valid], dtype=np.int64)
    lines = [invalid_line(position, item) if row is None else "" for position, item, row in shown]
    if not valid:
        return lines
    rules = [", ".join(texts) for texts in zip(*(rule_texts(mask, rows).tolist() for mask in judgement.masks),
                                                 strict=True)]
    eligible = judgement.eligible[rows]
    at = instance_row[rows[eligible]]
    written = allocation_texts(allocations, at) if at.size else []
    if written is None:
        return None
    selected = iter((allocations.choice[at] >= 0).tolist())
    allocated = iter(written)
    for i, rules_text, is_eligible in zip(valid, rules, eligible.tolist(), strict=True):
        position, item, _ = shown[i]
        if is_eligible:
            outcome = '"selected"' if next(selected) else '"dropped"'
            tail = f', "allocation": {next(allocated)}}}'
        else:
            outcome, tail = '"excluded"', "}"
        lines[i] = (f'{{"id": {json_string(item.id)}, "position": {position}, "outcome": {outcome}, '
                    f'"rules": [{rules_text}]{tail}')
    return lines
