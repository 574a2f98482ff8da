"""A result's trace, and its selected and excluded lists, written as JSON straight from the arrays.

Byte for byte ``json_text(x.to_dict())`` for each trace entry, chosen and excluded record (tests
hold them together), without building those objects: each rule's verdict JSON is written once per
group of rows that share a verdict (:meth:`RuleMask.codes`), or once per case with each row's own
texts laid in (:attr:`RuleMask.written`), and laid over the rows by indexing; the allocations'
offers are written from the instance's arrays, their numbers by :func:`json_numbers`. Each piece
of a line is a column of texts; the rows are joined by ``map("".join, zip(...))``, a loop in C.
A full trace of 10,000 records is mostly this.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from itertools import repeat
from operator import itemgetter
from typing import Any

import numpy as np
import orjson

from .policies.verdicts import Judgement, RuleMask, Verdict
from .result import json_string, json_text
from .solver.compile import Allocations, level_text


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


def json_numbers(values: np.ndarray) -> list[str]:
    """Each number of a float array as the encoder writes it (``float.__repr__``; finite values
    only). orjson writes the same shortest digits ten times faster, but with exponents of its
    own (``1e-5`` for ``1e-05``, ``0.00001`` for ``1e-05``): the values repr writes with an
    exponent (magnitude below 1e-4 or from 1e16 on) are written by repr."""
    if not values.size:
        return []
    values = np.ascontiguousarray(values, dtype=np.float64)  # what orjson writes as Python's floats
    out = orjson.dumps(values, option=orjson.OPT_SERIALIZE_NUMPY).decode()[1:-1].split(",")
    magnitude = np.abs(values)
    for at in np.flatnonzero(((magnitude < 1e-4) & (magnitude > 0)) | (magnitude >= 1e16)).tolist():
        out[at] = float.__repr__(float(values[at]))
    return out


def rule_texts(mask: RuleMask, rows: np.ndarray) -> list[str]:
    """Each row's verdict under ``mask`` as JSON."""
    written = None if mask.written is None else mask.written(rows)
    if written is not None:
        return written
    return mask.once_per_verdict(rows, lambda row: verdict_json(mask.verdict(row)))


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
    # at a price of 0 each value is its utility, bit for bit (-0.0 too): written once
    same = np.array_equal(value.view(np.int64), utility.view(np.int64))
    # each level's offers, a column of texts ("" where the row does not offer it), each text led
    # by the separator; a row's offers are its columns joined, less the first separator
    columns = []
    for j, level in enumerate(levels):
        at = np.flatnonzero(offered[:, j])
        if not at.size:
            continue
        utilities = json_numbers(utility[at, j])
        cells = np.full(len(rows), "", dtype=object)
        cells[at] = list(map("".join, zip(
            repeat(f', {{"level": {json_string(level)}, "tokens": '), map(int.__repr__, tokens[at, j].tolist()),
            repeat(', "utility": '), utilities, repeat(', "value": '),
            utilities if same else json_numbers(value[at, j]), repeat("}"))))
        columns.append(cells.tolist())
    offers = map(_LESS_SEPARATOR, map("".join, zip(*columns, strict=True))) if columns else repeat("", len(rows))
    names = _strings([json_string(level) for level in (*levels, "delete")])
    choice = allocations.choice[rows]
    if allocations.searched is None:
        decided: Iterable[str] = repeat("}")
    else:
        decided = _strings([', "decided_by": "bound"}', ', "decided_by": "search"}'])[
            allocations.searched[rows].astype(np.intp)].tolist()
    out = list(map("".join, zip(repeat('{"level": '), names[choice].tolist(), repeat(', "offered": ['), offers,
                                repeat("]"), decided)))
    for at in np.flatnonzero(compiled.annotated(rows)).tolist():  # few rows, if any
        row = int(rows[at])
        repairs, derived = compiled.repairs(row), compiled.derived(row)
        if repairs:
            out[at] += f', "repairs": {json_text([r.to_dict() for r in repairs])}'
        if derived is not None:
            out[at] += f', "derived_utility": {json_text(derived.to_dict())}'
    return out


_LESS_SEPARATOR = itemgetter(slice(2, None))


def selected_lines(allocations: Allocations) -> list[str] | None:
    """The result's ``selected`` list as JSON lines (``Chosen.to_json`` of each, byte for byte),
    without the Chosen objects; None where a utility is not finite (the objects' path raises)."""
    compiled, choice = allocations.compiled, allocations.choice
    inst, levels = compiled.instance, compiled.levels
    rows = np.flatnonzero(choice >= 0)
    at = choice[rows]
    utility = inst.utility[rows, at]
    if not np.isfinite(utility).all():
        return None
    records = [compiled.source[i] for i in compiled.rows[rows].tolist()]
    chosen = [levels[j] for j in at.tolist()]
    return list(map("".join, zip(
        repeat('{"id": '), (json_string(record.id) for record in records), repeat(', "level": '),
        map(json_string, chosen), repeat(', "tokens": '), map(int.__repr__, inst.tokens[rows, at].tolist()),
        repeat(', "utility": '), json_numbers(utility), repeat(', "text": '),
        (json_string(level_text(record, level)) for record, level in zip(records, chosen, strict=True)),
        repeat("}"))))


def excluded_lines(judgement: Judgement, shown: Sequence[tuple[int, Any, int | None]]) -> list[str]:
    """The result's ``excluded`` list as JSON lines (``Excluded.to_json`` of each, byte for byte)
    without the Excluded objects: ``shown`` holds (position, record, column row) of the excluded
    records in input order, row None for an invalid one (named by the rule `invalid`)."""
    rules = ['"invalid"'] * len(shown)
    reasons = [json_string(item.error.message) if row is None else "" for _, item, row in shown]
    valid = np.array([i for i, (_, _, row) in enumerate(shown) if row is not None], dtype=np.int64)
    rows = np.array([shown[i][2] for i in valid.tolist()], dtype=np.int64)
    deciding = judgement.deciding[rows]
    for index in np.unique(deciding).tolist():  # rule by rule: each words its rows' reasons at once
        mask, at = judgement.masks[index], np.flatnonzero(deciding == index)
        rule = json_string(mask.rule)
        for i, reason in zip(valid[at].tolist(), mask.reasons_of(rows[at]), strict=True):
            rules[i], reasons[i] = rule, json_string(reason)
    ids = (json_string(item.id) for _, item, _ in shown)
    return list(map("".join, zip(repeat('{"id": '), ids, repeat(', "rule": '), rules, repeat(', "reason": '), reasons,
                                repeat("}"))))


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
    eligible = judgement.eligible[rows]
    at = instance_row[rows[eligible]]
    written = allocation_texts(allocations, at) if at.size else []
    if written is None:
        return None
    # each line in pieces, one column of texts per piece, joined row by row
    outcome = np.full(len(rows), '"excluded"', dtype=object)
    outcome[eligible] = _strings(['"dropped"', '"selected"'])[(allocations.choice[at] >= 0).astype(np.intp)]
    tail = np.full(len(rows), "}", dtype=object)
    tail[eligible] = list(map("".join, zip(repeat(', "allocation": '), written, repeat("}"))))
    pieces: list[Iterable[str]] = [
        repeat('{"id": '), (json_string(shown[i][1].id) for i in valid), repeat(', "position": '),
        (int.__repr__(shown[i][0]) for i in valid), repeat(', "outcome": '), outcome.tolist(), repeat(', "rules": [')]
    for index, mask in enumerate(judgement.masks):
        pieces += [repeat(", ")] if index else []
        pieces.append(rule_texts(mask, rows))
    pieces += [repeat("]"), tail.tolist()]
    written_lines = map("".join, zip(*pieces, strict=False))  # the constant pieces repeat without end
    if len(valid) == len(lines):
        return list(written_lines)
    for i, line in zip(valid, written_lines, strict=True):
        lines[i] = line
    return lines
