"""A result's trace, and its selected and excluded lists, written as JSON straight from the arrays.

Byte for byte ``json_text(x.to_dict())`` for each trace entry, chosen and excluded record (tests
hold them together), without building those objects: each rule's verdict JSON is written once per
group of rows that share a verdict (:meth:`RuleMask.codes`; by the rule's own writer where it has
one), or once per case with each row's own texts laid in (:attr:`RuleMask.written`), and laid over
the rows by indexing; the allocations' offers are written from the instance's arrays, their
numbers by :func:`json_numbers` and :func:`json_ints`. Each piece of a line is a column of texts
(or one text for every row), and a line is its pieces joined by ``map("".join, zip(...))``,
a loop in C. The columns keep for the next turn what the records alone decide (each row's id and
position as JSON) and each row's offers with the numbers they were written from
(:meth:`Columns.memo`): a turn over the same records writes only what changed. A full trace of
10,000 records is mostly this."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from itertools import chain, repeat
from json.encoder import encode_basestring
from operator import attrgetter, itemgetter
from typing import Any

import numpy as np
import orjson

from .columns import Columns, distinct, groups, objects
from .policies.verdicts import Judgement, RuleMask, Verdict
from .result import json_string, json_text
from .solver.compile import Allocations, Compiled, level_text


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


def json_ints(values: np.ndarray) -> list[str]:
    """Each number of an integer array as the encoder writes it (``int.__repr__``: orjson writes
    a 64-bit integer's decimal digits the same way, three times faster)."""
    if not values.size:
        return []
    values = np.ascontiguousarray(values, dtype=np.int64)
    return orjson.dumps(values, option=orjson.OPT_SERIALIZE_NUMPY).decode()[1:-1].split(",")


def json_strings(values: Sequence[str | None]) -> list[str]:
    """Each string (or None) as :func:`json_string` writes it."""
    if None in values:
        return list(map(json_string, values))
    return list(map(encode_basestring, values))  # the encoder's own, without a Python call per value


def _ids(columns: Columns, rows: np.ndarray) -> list[str]:
    """The record ids of these rows as JSON. Where the rows are many (a quarter of the columns'
    or more), every row's is written and kept for the next turn; a few rows' (a trace of the
    excluded records only, of a large set) are written on their own."""
    if 4 * len(rows) < len(columns):
        return json_strings([columns.records[row].id for row in rows.tolist()])
    kept = columns.memo(("json", "ids"), lambda: objects(json_strings(list(map(_ID, columns.records)))))
    return kept[rows].tolist()


def _entry_heads(columns: Columns, rows: np.ndarray) -> list[str]:
    """The trace entries of these rows up to their outcome (``{"id": …, "position": …,
    "outcome": ``); kept for the next turn where the rows are many (as :func:`_ids`): ids and
    positions change only with the records."""
    def heads(ids: list[str], positions: np.ndarray) -> list[str]:
        return list(map("".join, zip(repeat('{"id": '), ids, repeat(', "position": '), json_ints(positions),
                                     repeat(', "outcome": '), strict=False)))

    if 4 * len(rows) < len(columns):
        return heads(_ids(columns, rows), columns.index[rows])
    every = np.arange(len(columns))
    kept = columns.memo(("json", "entry-heads"), lambda: objects(heads(_ids(columns, every), columns.index)))
    return kept[rows].tolist()


def _without_text(columns: Columns) -> bool:
    """No record (and no level of one) has a text: every chosen level's text is null. Kept for
    the next turn."""
    def build() -> bool:
        records = columns.records
        texts = list(map(_TEXT, chain(records, chain.from_iterable(map(_LEVELS, records)))))
        return texts.count(None) == len(texts)

    return columns.memo(("json", "without-text"), build)


_ID, _TEXT, _LEVELS = attrgetter("id"), attrgetter("text"), attrgetter("levels")


def rule_pieces(mask: RuleMask, rows: np.ndarray, lead: str = "") -> list[Iterable[str]]:
    """Each row's verdict under ``mask`` as JSON, led by ``lead``: the pieces of a line it takes.
    Rows that share a verdict (:meth:`RuleMask.codes`) are worded once for each group, by the
    rule's own writer where it has one, and laid by indexing, the lead inside; a rule without
    groups, or whose groups are more than half its rows, is written row by row by its writer,
    the lead a piece of its own."""
    codes = mask.codes()
    if codes is not None and rows.size:
        first, inverse = groups(codes[rows])
        if mask.written is None or 2 * first.size <= rows.size:
            texts = None if mask.written is None else mask.written(rows[first])
            if texts is None:
                texts = [verdict_json(mask.verdict(row)) for row in rows[first].tolist()]
            return [objects([lead + text for text in texts])[inverse].tolist()]
    written = None if mask.written is None else mask.written(rows)
    if written is None:
        written = [verdict_json(mask.verdict(row)) for row in rows.tolist()]
    return [repeat(lead), written] if lead else [written]


def _laid(count: int, at: np.ndarray, values: Sequence[str] | np.ndarray) -> list[str]:
    """A column of ``count`` texts: ``values`` at the rows ``at``, "" elsewhere."""
    out = np.full(count, "", dtype=object)
    out[at] = values
    return out.tolist()


def _offer_texts(levels: Sequence[str], tokens: np.ndarray, utility: np.ndarray, value: np.ndarray,
                 offered: np.ndarray) -> list[str]:
    """Each row's offered levels as JSON, less the list's brackets (rows of the instance's arrays)."""
    # at a price of 0 each value is its utility, bit for bit (-0.0 too): written once
    same = np.array_equal(value.view(np.int64), utility.view(np.int64))
    count = len(tokens)
    pieces: list[Iterable[str]] = [repeat("", count)]  # one finite piece: a row may offer no level
    # each level's offer, in pieces: each a column ("" where a row does not offer the level), led
    # by the separator where the row offers a level before it
    before = np.zeros(count, dtype=bool)
    for j, level in enumerate(levels):
        at = np.flatnonzero(offered[:, j])
        if not at.size:
            continue
        head = f'{{"level": {json_string(level)}, "tokens": '
        leads = objects([head, ", " + head])[before[at].astype(np.intp)].tolist()
        utilities = json_numbers(utility[at, j])
        texts = [leads, json_ints(tokens[at, j]), ', "utility": ', utilities, ', "value": ',
                 utilities if same else json_numbers(value[at, j]), "}"]
        if at.size == count:  # every row offers it: the constant pieces repeat
            pieces += [repeat(text) if isinstance(text, str) else text for text in texts]
        else:
            pieces += [_laid(count, at, text) for text in texts]
        before[at] = True
    return list(map("".join, zip(*pieces, strict=False)))  # the constant pieces repeat without end


def _offers(compiled: Compiled, rows: np.ndarray, tokens: np.ndarray, utility: np.ndarray, value: np.ndarray,
            offered: np.ndarray, columns: Columns | None) -> list[str]:
    """:func:`_offer_texts` of the instance rows ``rows``, kept by the columns for the next turn
    with the numbers each was written from: a row whose offers (levels, tokens, utilities and
    values, bit for bit) are those of its last writing reads its text again; the others are
    written and kept."""
    if columns is None or compiled.source is not columns.records:
        return _offer_texts(compiled.levels, tokens, utility, value, offered)
    # what a row's text is written from: its numbers where it offers a level, 0 elsewhere
    facts = (offered, np.where(offered, tokens, 0), np.where(offered, utility.view(np.int64), 0),
             np.where(offered, value.view(np.int64), 0))
    kept = columns.memo(("json", "offers", compiled.levels), lambda: [None])
    state = kept[0]  # read once: a turn on another thread replaces it whole, never in part
    at = compiled.rows[rows]  # the rows' rows in the columns
    if state is None:  # the first writing: every row's
        out = objects(_offer_texts(compiled.levels, tokens, utility, value, offered))
        n, k = len(columns), len(compiled.levels)
        state = (np.zeros(n, dtype=bool), np.zeros((n, k), dtype=bool), *(np.zeros((n, k), dtype=np.int64)
                 for _ in range(3)), np.full(n, "", dtype=object))
        stale = np.arange(len(rows))
    else:
        same = state[0][at]
        for fact, was in zip(facts, state[1:-1], strict=True):
            same &= (was[at] == fact).all(axis=1)
        out, stale = state[-1][at], np.flatnonzero(~same)
        if stale.size:
            out[stale] = _offer_texts(compiled.levels, tokens[stale], utility[stale], value[stale], offered[stale])
            state = tuple(array.copy() for array in state)
    if stale.size:
        state[0][at[stale]] = True
        for fact, was in zip(facts, state[1:-1], strict=True):
            was[at[stale]] = fact[stale]
        state[-1][at[stale]] = out[stale]
        kept[0] = state
    return out.tolist()


def allocation_tails(allocations: Allocations, rows: np.ndarray, columns: Columns | None = None) -> list[str] | None:
    """The end of each trace entry of an eligible record, from the rules' closing bracket on:
    its ``allocation`` member (then ``repairs`` and ``derived_utility`` where a row has them) and
    the entry's closing brace, for each instance row in ``rows``; None where a value is not
    finite (the encoder refuses it: the entry objects' path raises as it does). ``columns``:
    those of the records compiled from, which keep each row's offers as JSON (:func:`_offers`)."""
    compiled = allocations.compiled
    inst, levels = compiled.instance, compiled.levels
    tokens, utility, offered = inst.tokens[rows], inst.utility[rows], inst.mask[rows]
    value = utility - inst.price * tokens
    if not (np.isfinite(utility[offered]).all() and np.isfinite(value[offered]).all()):
        return None
    heads = objects([f'], "allocation": {{"level": {json_string(level)}, "offered": ['
                      for level in (*levels, "delete")])
    if allocations.searched is None:
        decided: Iterable[str] = repeat("]}}")
    else:
        decided = objects(['], "decided_by": "bound"}}', '], "decided_by": "search"}}'])[
            allocations.searched[rows].astype(np.intp)].tolist()
    out = list(map("".join, zip(heads[allocations.choice[rows]].tolist(),
                                _offers(compiled, rows, tokens, utility, value, offered, columns), decided,
                                strict=False)))  # decided may repeat without end
    for at in np.flatnonzero(compiled.annotated(rows)).tolist():  # few rows, if any
        row = int(rows[at])
        repairs, derived = compiled.repairs(row), compiled.derived(row)
        extra = ""
        if repairs:
            extra += f', "repairs": {json_text([r.to_dict() for r in repairs])}'
        if derived is not None:
            extra += f', "derived_utility": {json_text(derived.to_dict())}'
        out[at] = out[at][:-1] + extra + "}"
    return out


def selected_lines(allocations: Allocations, columns: Columns | None = None) -> list[str] | None:
    """The result's ``selected`` list as JSON lines (``Chosen.to_json`` of each, byte for byte),
    without the Chosen objects; None where a utility is not finite (the objects' path raises).
    ``columns``: those of the records compiled from, whose ids as JSON they keep."""
    compiled, choice = allocations.compiled, allocations.choice
    inst, levels = compiled.instance, compiled.levels
    rows = np.flatnonzero(choice >= 0)
    at = choice[rows]
    utility = inst.utility[rows, at]
    if not np.isfinite(utility).all():
        return None
    source = compiled.rows[rows]
    mine = columns is not None and compiled.source is columns.records
    ids = _ids(columns, source) if mine else json_strings([compiled.source[i].id for i in source.tolist()])
    if mine and _without_text(columns):
        texts: Iterable[str] = repeat("null")
    else:
        records = list(map(compiled.source.__getitem__, source.tolist()))
        texts = json_strings(list(map(level_text, records, [levels[j] for j in at.tolist()])))
    names = objects([f', "level": {json_string(level)}, "tokens": ' for level in levels])[at].tolist()
    return list(map("".join, zip(
        repeat('{"id": '), ids, names, json_ints(inst.tokens[rows, at]), repeat(', "utility": '),
        json_numbers(utility), repeat(', "text": '), texts, repeat("}"))))


def _interleaved(lines: list[str], positions: np.ndarray, invalid: Sequence[tuple[int, str]]) -> list[str]:
    """``lines`` (of the records at ``positions``, ascending) with the ``invalid`` records' (position,
    line) laid in by position."""
    if not invalid:
        return lines
    return [line for _, line in sorted([*zip(positions.tolist(), lines, strict=True), *invalid], key=itemgetter(0))]


def excluded_lines(judgement: Judgement, rows: np.ndarray, invalid: Sequence[tuple[int, Any]]) -> list[str]:
    """The result's ``excluded`` list as JSON lines (``Excluded.to_json`` of each, byte for byte)
    without the Excluded objects: ``rows`` are the excluded column rows (ascending), ``invalid``
    the (position, record) of the invalid records (named by the rule `invalid`)."""
    columns = judgement.columns
    deciding = judgement.deciding[rows]
    rules, reasons = np.empty(len(rows), dtype=object), np.empty(len(rows), dtype=object)
    for index in distinct(deciding).tolist():  # rule by rule: each words its rows' reasons at once
        mask, at = judgement.masks[index], np.flatnonzero(deciding == index)
        rules[at] = f', "rule": {json_string(mask.rule)}, "reason": '
        reasons[at] = json_strings(mask.reasons_of(rows[at]))
    lines = list(map("".join, zip(repeat('{"id": '), _ids(columns, rows), rules.tolist(), reasons.tolist(),
                                  repeat("}"))))
    return _interleaved(lines, columns.index[rows], [
        (position, f'{{"id": {json_string(item.id)}, "rule": "invalid", "reason": {json_string(item.error.message)}}}')
        for position, item in invalid])


def trace_lines(
    judgement: Judgement,
    allocations: Allocations,
    rows: np.ndarray,
    instance_row: np.ndarray,
    invalid: Sequence[tuple[int, Any]],
    invalid_line: Callable[[int, Any], str],
) -> list[str] | None:
    """The JSON of each trace entry: ``rows`` are the column rows shown (ascending), ``invalid``
    the (position, record) of the invalid records, whose lines ``invalid_line(position, record)``
    writes; None where the entry objects must write it (see :func:`allocation_tails`)."""
    eligible = judgement.eligible[rows]
    at = instance_row[rows[eligible]]
    tails = allocation_tails(allocations, at, judgement.columns) if at.size else []
    if tails is None:
        return None
    # each line in pieces, one column of texts per piece, joined row by row
    outcome = np.zeros(len(rows), dtype=np.intp)
    outcome[eligible] = 1 + (allocations.choice[at] >= 0)
    opening = objects(['"excluded", "rules": [', '"dropped", "rules": [', '"selected", "rules": ['])[outcome]
    ends = np.full(len(rows), "]}", dtype=object)
    ends[eligible] = tails
    pieces: list[Iterable[str]] = [_entry_heads(judgement.columns, rows), opening.tolist()]
    for index, mask in enumerate(judgement.masks):
        pieces += rule_pieces(mask, rows, ", " if index else "")
    pieces.append(ends.tolist())
    lines = list(map("".join, zip(*pieces, strict=False)))  # the constant pieces repeat without end
    return _interleaved(lines, judgement.columns.index[rows],
                        [(position, invalid_line(position, item)) for position, item in invalid])
