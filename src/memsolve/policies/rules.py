"""The rule engine: every rule evaluated for every record, each verdict with its evidence.

A record is eligible when all its verdicts pass. When it is not, the *deciding* rule is the
first failing one in this order: ``tenant``, then the policy's rules in the order written.
All failures stay in the trace, so an author sees every reason at once.

Each rule is a vectorised mask over the record columns (:class:`RuleMask`) and a function that
words one record's verdict (reason and evidence) when a trace, an explanation or a table asks:
a turn decides over arrays and builds verdict objects only for what it shows.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from itertools import repeat
from json.encoder import encode_basestring
from operator import attrgetter, itemgetter
from typing import Any

import numpy as np

from ..columns import ABSENT, Columns, distinct, objects, renumbered
from ..context import ResolvedContext
from ..errors import InputError
from ..records import DELETE, Record
from ..result import json_string, json_text
from ..timeutil import RFC3339, TimeValueError, format_time, parse_duration
from .model import (
    Duration,
    FreshnessRule,
    LatestKeyRule,
    MaxAgeRule,
    Policy,
    RelevanceRule,
    Rule,
    SessionsRule,
    StoresRule,
    VersionAuthorityRule,
)
from .verdicts import Ceiling, Judgement, RuleMask, Verdict, number


class Evaluator:
    """The policy and the moment a rule needs: durations in the moment's units, times for evidence."""

    def __init__(self, policy: Policy, context: ResolvedContext) -> None:
        self.policy = policy
        self.ctx = context

    def duration(self, value: Duration | None) -> float | None:
        if value is None:
            return None
        try:
            return parse_duration(value.value, self.ctx.time_kind)
        except TimeValueError as exc:
            raise InputError(str(exc), value.where) from None

    def span(self, seconds_or_units: float) -> float | int | str:
        """A duration for evidence: units as given, or `36h`-style for RFC 3339 times."""
        if self.ctx.time_kind != RFC3339:
            return number(seconds_or_units)
        value = seconds_or_units
        for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
            if value >= size and (value / size).is_integer():
                return f"{int(value // size)}{unit}"
        return f"{number(value)}s"

    def time(self, value: float) -> float | int | str:
        out = format_time(value, self.ctx.time_kind)
        return number(out) if isinstance(out, float) else out


def evaluate(
    policy: Policy,
    columns: Columns,
    context: ResolvedContext,
    ceilings: Mapping[str, Ceiling] | None = None,
) -> Judgement:
    """Judge every record under every rule, as arrays over ``columns``.

    With ``ceilings`` (a round with state) the last rule is ``fidelity-ceiling``.
    """
    ev = Evaluator(policy, context)
    masks = [_tenant(ev, columns)]
    for rule in policy.rules:
        masks.append(_mask_for(ev, rule, columns))
    if ceilings is not None:
        masks.append(_fidelity_ceiling(ceilings, columns))
    return Judgement.of(columns, tuple(masks))


def same(*columns: np.ndarray) -> np.ndarray:
    """One code per row, equal for rows equal in every column (no NaN in them): each column's
    codes folded into the codes so far and renumbered, so they stay below the number of rows."""
    code = np.zeros(len(columns[0]), dtype=np.int64)
    for column in columns:
        values, inverse = np.unique(column, return_inverse=True)
        code = renumbered(code * len(values) + inverse.ravel())
    return code


def _everyone(cols: Columns) -> np.ndarray:
    return np.ones(len(cols), dtype=bool)


def _fidelity_ceiling(ceilings: Mapping[str, Ceiling], cols: Columns) -> RuleMask:
    deleted = {rid for rid, c in ceilings.items() if c.level == DELETE}
    passed = np.fromiter((r.id not in deleted for r in cols.records), dtype=bool, count=len(cols))

    def explain(row: int) -> Verdict:
        record = cols.records[row]
        ceiling = ceilings.get(record.id)
        if ceiling is None:
            return Verdict("fidelity-ceiling", True, "new record: any level", {"ceiling": None})
        evidence = {"ceiling": ceiling.level, "since_round": ceiling.round}
        if ceiling.level == DELETE:
            return Verdict("fidelity-ceiling", False,
                           f"deleted in round {ceiling.round}; returns only with --refresh", evidence)
        return Verdict("fidelity-ceiling", True,
                       f"at most `{ceiling.level}` (set in round {ceiling.round})", evidence)

    return RuleMask("fidelity-ceiling", passed, explain)


def _mask_for(ev: Evaluator, rule: Rule, cols: Columns) -> RuleMask:
    if isinstance(rule, StoresRule):
        return _stores(rule, cols)
    if isinstance(rule, SessionsRule):
        return _sessions(ev, rule, cols)
    if isinstance(rule, MaxAgeRule):
        return _max_age(ev, rule, cols)
    if isinstance(rule, FreshnessRule):
        return _freshness(ev, rule, cols)
    if isinstance(rule, VersionAuthorityRule):
        return _version_authority(ev, rule, cols)
    if isinstance(rule, LatestKeyRule):
        return _latest_key(rule, cols)
    if isinstance(rule, RelevanceRule):
        return _relevance(ev, rule, cols)
    raise AssertionError(type(rule))


def _tenant(ev: Evaluator, cols: Columns) -> RuleMask:
    tenant = ev.ctx.tenant
    passed = _everyone(cols) if tenant is None else cols.memo(
        ("tenant", tenant), lambda: cols.tenant.codes == cols.tenant.code(tenant))

    def explain(row: int) -> Verdict:
        record = cols.records[row]
        evidence = {"tenant": tenant, "record_tenant": record.tenant}
        if tenant is None:
            return Verdict("tenant", True, "no tenant configured; isolation not enforced", evidence)
        if record.tenant is None:
            return Verdict("tenant", False, "record has no tenant (fail closed)", evidence)
        if record.tenant != tenant:
            return Verdict("tenant", False, f"belongs to tenant `{record.tenant}`, not `{tenant}`", evidence)
        return Verdict("tenant", True, f"belongs to tenant `{tenant}`", evidence)

    return RuleMask("tenant", passed, explain, shared_by=lambda: cols.tenant.codes)


def _stores(rule: StoresRule, cols: Columns) -> RuleMask:
    allow = rule.allow

    def explain(row: int) -> Verdict:
        record = cols.records[row]
        evidence = {"store": record.store, "allow": list(allow)}
        if record.store is None:
            return Verdict(rule.id, False, "record has no store (fail closed)", evidence)
        if record.store not in allow:
            return Verdict(rule.id, False, f"store `{record.store}` is not allowed", evidence)
        return Verdict(rule.id, True, f"store `{record.store}` is allowed", evidence)

    return RuleMask(rule.id, cols.memo(("stores", tuple(allow)), lambda: cols.store.isin(allow)), explain,
                    shared_by=lambda: cols.store.codes)


def _sessions(ev: Evaluator, rule: SessionsRule, cols: Columns) -> RuleMask:
    current = ev.ctx.session
    if not rule.include_previous and current is None:
        raise InputError(
            "this rule keeps only the current session, but no session is given: "
            "pass --session or set `context.session`",
            rule.where,
        )
    passed = _everyone(cols) if rule.include_previous else cols.memo(
        ("session", current), lambda: cols.session.codes == cols.session.code(current))

    def explain(row: int) -> Verdict:
        record = cols.records[row]
        evidence = {"session": record.session, "current_session": current,
                    "include_previous": rule.include_previous}
        if rule.include_previous:
            return Verdict(rule.id, True, "previous sessions are included", evidence)
        if record.session is None:
            return Verdict(rule.id, False, "record has no session (fail closed)", evidence)
        if record.session != current:
            return Verdict(rule.id, False, f"from session `{record.session}`, not the current `{current}`", evidence)
        return Verdict(rule.id, True, "from the current session", evidence)

    return RuleMask(rule.id, passed, explain, shared_by=lambda: cols.session.codes)


def _max_age(ev: Evaluator, rule: MaxAgeRule, cols: Columns) -> RuleMask:
    limit = ev.duration(rule.limit)
    assert limit is not None  # the schema requires a value

    limit_span = ev.span(limit)

    def worded(within: bool, span: Any, limit_span: Any) -> str:
        return f"age {span} is within max age {limit_span}" if within else f"age {span} exceeds max age {limit_span}"

    def judged(row: int) -> tuple[bool, Any, str]:
        """Whether the row is within the limit (inclusive), its age for evidence, the reason."""
        age = ev.ctx.now - cols.records[row].timestamp
        span = ev.span(age)
        within = age <= limit  # inclusive boundary
        return within, span, worded(within, span, limit_span)

    def reason(row: int) -> str:
        return judged(row)[2]

    def explain(row: int) -> Verdict:
        within, span, reason_text = judged(row)
        return Verdict(rule.id, within, reason_text, {"age": span, "max_age": limit_span})

    def written(rows: np.ndarray) -> list[str] | None:
        age = ev.ctx.now - cols.timestamp[rows]
        spans = _worded(age, ev.span)
        if spans is None:
            return None
        head, limit_text, limit_json = f'{{"rule": {json_string(rule.id)}, "passed": ', *_texts(limit_span)
        out = np.empty(len(rows), dtype=object)
        for within, at in ((True, np.flatnonzero(age <= limit)), (False, np.flatnonzero(~(age <= limit)))):
            template = (f'{head}{"true" if within else "false"}, "reason": "{worded(within, _AGE, limit_text)}", '
                        f'"evidence": {{"age": {_AGE_JSON}, "max_age": {limit_json}}}}}')
            out[at] = _lay(template, {_AGE: spans[0][at].tolist(), _AGE_JSON: spans[1][at].tolist()})
        return out.tolist()

    return RuleMask(rule.id, ev.ctx.now - cols.timestamp <= limit, explain, reason=reason,
                    shared_by=lambda: cols.memo(("same", "timestamp"), lambda: same(cols.timestamp)),
                    written=written)


def _texts(value: Any) -> tuple[str, str]:
    """A value of a verdict as a reason's f-string writes it (JSON-escaped, to sit in the reason's
    JSON string) and as JSON; ValueError where JSON cannot hold it (not finite)."""
    kind = type(value)
    if kind is str:
        written = json_string(value)
        return written[1:-1], written
    if kind is int or (kind is float and value - value == 0):  # a number writes as its repr both ways
        written = repr(value)
        return written, written
    return json_string(str(value))[1:-1], json_text(value)


def _worded(values: np.ndarray, word: Callable[[float], Any]) -> tuple[np.ndarray, np.ndarray] | None:
    """Each value worded by ``word`` (once per distinct value), as :func:`_texts` writes it: the
    texts and the JSON, object arrays; None where one is not finite (the row-by-row path then
    raises as it does)."""
    distinct, inverse = np.unique(values, return_inverse=True)
    try:
        texts = [_texts(word(value)) for value in distinct.tolist()]
    except ValueError:
        return None
    written, json = objects([text for text, _ in texts]), objects([value for _, value in texts])
    at = inverse.ravel()
    return written[at], json[at]


def _freshness(ev: Evaluator, rule: FreshnessRule, cols: Columns) -> RuleMask:
    default_ttl = ev.duration(rule.default_ttl)
    by_store = {store: ev.duration(ttl) for store, ttl in rule.ttl_by_store.items()}

    def ttls() -> tuple[np.ndarray, np.ndarray]:
        """Each row's ttl: its own when given (NaN: never expires), else its store's, else the
        default; and the rows that never expire."""
        ttl = np.full(len(cols), np.nan if default_ttl is None else default_ttl)
        for store, value in by_store.items():
            ttl[cols.store.codes == cols.store.code(store)] = np.nan if value is None else value
        ttl = np.where(cols.ttl_given, cols.ttl, ttl)
        return ttl, np.isnan(ttl)

    ttl, forever = cols.memo(("ttl", default_ttl, tuple(sorted(by_store.items()))), ttls)
    passed = forever | (ev.ctx.now - cols.timestamp <= ttl)  # inclusive: fresh at exactly its ttl

    now = ev.time(ev.ctx.now)  # the same for every record

    def facts(row: int) -> tuple[Record, float | None, str, float]:
        """The row's record, its ttl and where the ttl comes from, its age."""
        record = cols.records[row]
        if record.ttl_given:
            ttl, source = record.ttl, "record"
        elif record.store in by_store:
            ttl, source = by_store[record.store], f"store `{record.store}`"
        else:
            ttl, source = default_ttl, "policy default"
        return record, ttl, source, ev.ctx.now - record.timestamp

    def worded(ttl: float | None, source: str, age: float, spans: tuple[Any, Any] | None = None) -> str:
        """The reason; ``spans`` (age and ttl as evidence writes them) when the caller has them."""
        if ttl is None:
            return f"never expires (ttl null, from {source})"
        age_span, ttl_span = spans or (ev.span(age), ev.span(ttl))
        if age <= ttl:
            return f"age {age_span} is within ttl {ttl_span}"
        return f"expired: age {age_span} exceeds ttl {ttl_span} ({source})"

    def explain(row: int) -> Verdict:
        record, ttl, source, age = facts(row)
        spans = ev.span(age), None if ttl is None else ev.span(ttl)
        evidence = {"now": now, "timestamp": ev.time(record.timestamp), "age": spans[0], "ttl": spans[1],
                    "ttl_from": source}
        return Verdict(rule.id, ttl is None or age <= ttl, worded(ttl, source, age, spans), evidence)

    def shared_by() -> np.ndarray:  # a ttl of its own (null: -1), else none (-2): its store's or the default
        return cols.memo(("same", "freshness"), lambda: same(
            cols.timestamp, cols.store.codes, np.where(cols.ttl_given, np.nan_to_num(cols.ttl, nan=-1.0), -2.0)))

    def written(rows: np.ndarray) -> list[str] | None:
        stamps = cols.timestamp[rows]
        age, row_ttl = ev.ctx.now - stamps, ttl[rows]
        lasting = ~np.isnan(row_ttl)
        ages, times = _worded(age, ev.span), _worded(stamps, ev.time)
        ttls = _worded(np.where(lasting, row_ttl, 0.0), ev.span)  # a null ttl's is never written
        if ages is None or times is None or ttls is None:
            return None
        head, now_json = f'{{"rule": {json_string(rule.id)}, "passed": ', json_text(now)
        # where each row's ttl comes from: its own (a code past every store's), its store's, the default
        own = len(cols.store.values)
        sources = {own: _texts("record"), ABSENT: _texts("policy default")}
        sources |= {cols.store.code(store): _texts(f"store `{store}`") for store in by_store}
        store = np.where(cols.store.isin(list(by_store))[rows], cols.store.codes[rows], ABSENT)
        from_codes = np.where(cols.ttl_given[rows], own, store)
        expired = lasting & (age > row_ttl)
        columns = {_AGE: ages[0], _AGE_JSON: ages[1], _TIME: times[1], _TTL: ttls[0], _TTL_JSON: ttls[1]}
        out = np.empty(len(rows), dtype=object)
        # worded once for each source and case (never expires, within, expired), with stand-ins for
        # the row's own texts; a case's numbers only take worded's branch (age 0 or 2, ttl 1)
        for code in distinct(from_codes).tolist():
            source_text, source_json = sources[code]
            for lasts, within in ((False, True), (True, True), (True, False)):
                at = np.flatnonzero((from_codes == code) & (lasting == lasts) & (expired != within))
                if not at.size:
                    continue
                reason = worded(1.0 if lasts else None, source_text, 0.0 if within else 2.0, (_AGE, _TTL))
                template = (f'{head}{"true" if within else "false"}, "reason": "{reason}", "evidence": {{"now": '
                            f'{now_json}, "timestamp": {_TIME}, "age": {_AGE_JSON}, '
                            f'"ttl": {_TTL_JSON if lasts else "null"}, "ttl_from": {source_json}}}}}')
                out[at] = _lay(template, {name: column[at].tolist() for name, column in columns.items()})
        return out.tolist()

    return RuleMask(rule.id, passed, explain, reason=lambda row: worded(*facts(row)[1:]), shared_by=shared_by,
                    written=written)


_NO_VERSION = -3  # the code of "no known current version": equal to no record's version


def _version_authority(ev: Evaluator, rule: VersionAuthorityRule, cols: Columns) -> RuleMask:
    # the context has already reconciled this rule's versions with the caller's and the file's
    versions = dict(ev.ctx.current_versions)
    default = ev.ctx.current_version

    def code(version: str | None) -> int:
        return _NO_VERSION if version is None else cols.version.code(version)

    def mask() -> np.ndarray:
        # the current version's code for each document (an empty document name counts as none)
        by_document = np.array([code(versions.get(d, default) if d else default) for d in cols.document.values]
                               + [code(default)], dtype=np.int32)
        documents = np.where(cols.document.codes == ABSENT, len(cols.document.values), cols.document.codes)
        return ~cols.authority | (cols.version.codes == by_document[documents])

    passed = cols.memo(("version", default, tuple(sorted(versions.items()))), mask)

    def explain(row: int) -> Verdict:
        record = cols.records[row]
        current = versions.get(record.document, default) if record.document else default
        evidence = {"authority": record.authority, "document": record.document,
                    "version": record.version, "current_version": current}
        if not record.authority:
            return Verdict(rule.id, True, "not authority-bearing", evidence)
        doc = f" of `{record.document}`" if record.document else ""
        if current is None:
            return Verdict(rule.id, False, f"authority with no known current version{doc} (fail closed)", evidence)
        if record.version != current:
            return Verdict(
                rule.id, False, f"authority bound to {record.version}, current{doc} is {current}", evidence
            )
        return Verdict(rule.id, True, f"authority bound to the current version {current}", evidence)

    return RuleMask(rule.id, passed, explain, shared_by=lambda: cols.memo(
        ("same", "version"), lambda: same(cols.authority, cols.document.codes, cols.version.codes)))


def _latest_key(rule: LatestKeyRule, cols: Columns) -> RuleMask:
    # Decided over all the tenant's records before any other filter: a superseded record
    # stays out even when its successor is excluded by another rule (never resurrected).
    # One sort by (tenant, key, timestamp, input order): the last row of each group wins, so a
    # timestamp tie goes to the later input position.
    winner, tie, passed = cols.memo(("latest",), lambda: _latest(cols))
    as_lists: list[tuple[list[int], list[bool]]] = []  # winner and tie as lists, on first use: a trace reads many

    def facts(row: int) -> tuple[Record, Record, bool, bool]:
        """The row's record, its key's latest record, whether the row is that one (by row: a set
        built by hand may hold one record object twice), whether it won a timestamp tie."""
        if not as_lists:
            as_lists.append((winner.tolist(), tie.tolist()))
        winners, ties = as_lists[0]
        records = cols.records
        return records[row], records[winners[row]], winners[row] == row, ties[row]

    def worded(key: str | None, latest: str, is_latest: bool, tied: bool) -> str:
        if key is None:
            return "record has no key"
        if is_latest:
            return f"latest for key `{key}`{' (timestamp tie won by later input position)' if tied else ''}"
        tie_note = " (same timestamp; the later input position wins)" if tied else ""
        return f"superseded by `{latest}` for key `{key}`{tie_note}"

    def reason(row: int) -> str:
        record, best, is_latest, tied = facts(row)
        return worded(record.key, best.id, is_latest, tied)

    def explain(row: int) -> Verdict:
        record, best, is_latest, tied = facts(row)
        if record.key is None:
            return Verdict(rule.id, True, reason(row), {"key": None})
        evidence = {"key": record.key, "latest": best.id, "tie": tied}
        return Verdict(rule.id, is_latest, reason(row), evidence)

    def by_case(rows: np.ndarray, keys: np.ndarray, ids_of: Callable[[], np.ndarray],
                template_of: Callable[[bool, bool], str], keyless: str) -> list[str]:
        """Each row's text: ``template_of(latest, tied)`` once for each of the four cases, with
        each row's key (``keys``, by code) and latest id (``ids_of()``, by row; object arrays)
        laid into it; ``keyless`` for a row without a key."""
        codes, winners, ties = cols.key.codes[rows], winner[rows], tie[rows]
        is_latest = winners == rows
        out = np.full(len(rows), keyless, dtype=object)
        ids: np.ndarray | None = None
        for latest, tied in ((True, False), (True, True), (False, False), (False, True)):
            at = np.flatnonzero((codes != ABSENT) & (is_latest == latest) & (ties == tied))
            if at.size:
                ids = ids_of() if ids is None else ids
                out[at] = _lay(template_of(latest, tied), {_KEY: keys[codes[at]].tolist(),
                                                           _ID: ids[winners[at]].tolist()})
        return out.tolist()

    def written(rows: np.ndarray) -> list[str]:
        # each row's verdict as JSON, worded from escaped pieces: a JSON string escapes character
        # by character, so the escaped reason is its pieces' escaped texts joined
        head = f'{{"rule": {json_string(rule.id)}, "passed": '

        def verdict(latest: bool, tied: bool) -> str:
            return (f'{head}{"true" if latest else "false"}, "reason": "{worded(_KEY, _ID, latest, tied)}", '
                    f'"evidence": {{"key": "{_KEY}", "latest": "{_ID}", "tie": {"true" if tied else "false"}}}}}')

        keyless = f'{head}true, "reason": "{worded(None, "", True, False)}", "evidence": {{"key": null}}}}'
        # the escaped keys and ids depend on the records alone: kept for the next turn
        def escaped_ids() -> np.ndarray:
            return objects(_escaped(list(map(_RECORD_ID, cols.records))))

        return by_case(rows, cols.memo(("escaped keys",), lambda: objects(_escaped(cols.key.values))),
                       lambda: cols.memo(("escaped ids",), escaped_ids), verdict, keyless)

    def reasons(rows: np.ndarray) -> list[str]:  # as ``written``, the reason alone and not escaped
        return by_case(rows, cols.memo(("key values",), lambda: objects(cols.key.values)),
                       lambda: cols.memo(("record ids",), lambda: objects(list(map(_RECORD_ID, cols.records)))),
                       lambda latest, tied: worded(_KEY, _ID, latest, tied), worded(None, "", True, False))

    return RuleMask(rule.id, passed, explain, reason=reason, written=written, reasons=reasons)


# stand-ins for a row's own texts in a verdict worded once for many rows (NUL: JSON escapes it
# everywhere else, so a stand-in never meets a written character)
_KEY, _ID, _AGE, _AGE_JSON, _TTL, _TTL_JSON, _TIME = (f"\x00{name}\x00" for name in (
    "key", "id", "age", "age_json", "ttl", "ttl_json", "time"))
_STAND_IN = re.compile("(\x00[a-z_]+\x00)")


def _lay(template: str, laid: Mapping[str, list[str]]) -> list[str]:
    """The template once for each row, each stand-in replaced by the row's text in ``laid``."""
    pieces = [laid[piece] if piece in laid else repeat(piece) for piece in _STAND_IN.split(template)]
    return list(map("".join, zip(*pieces, strict=False)))  # the constant pieces repeat without end


def _escaped(values: Sequence[str]) -> list[str]:
    """Each string as JSON writes it inside quotes (escaped, less the quotes)."""
    return list(map(_UNQUOTED, map(encode_basestring, values)))


_UNQUOTED, _RECORD_ID = itemgetter(slice(1, -1)), attrgetter("id")


def _latest(cols: Columns) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each row's group winner (itself without a key), whether it shares its group's latest
    timestamp with another row, and whether it is the winner."""
    n = len(cols)
    keyed = np.flatnonzero(cols.key.codes != ABSENT)
    winner = np.arange(n)
    tie = np.zeros(n, dtype=bool)
    if keyed.size:
        tenants, keys, stamps = cols.tenant.codes[keyed], cols.key.codes[keyed], cols.timestamp[keyed]
        order = keyed[np.lexsort((keyed, stamps, keys, tenants))]
        t, k = cols.tenant.codes[order], cols.key.codes[order]
        last = np.ones(order.size, dtype=bool)
        last[:-1] = (t[1:] != t[:-1]) | (k[1:] != k[:-1])
        group = np.cumsum(np.r_[True, last[:-1]]) - 1  # each sorted row's group number
        winners = order[last]
        winner[order] = winners[group]
        at_latest = cols.timestamp[order] == cols.timestamp[winner[order]]
        tie_groups = np.bincount(group, weights=at_latest, minlength=winners.size) > 1
        tie[order] = at_latest & tie_groups[group]
    return winner, tie, winner == np.arange(n)


def _relevance(ev: Evaluator, rule: RelevanceRule, cols: Columns) -> RuleMask:
    query = ev.ctx.query
    if not query:
        def no_query(row: int) -> Verdict:
            return Verdict(rule.id, True, "no query given; relevance not applied", {"query": None})
        return RuleMask(rule.id, _everyone(cols), no_query)

    half_life = ev.duration(rule.half_life) if rule.half_life is not None else (
        24.0 if ev.ctx.time_kind == "number" else 24 * 3600.0
    )
    assert half_life is not None
    from ..relevance import RelevanceIndex  # imported on use: a policy without relevance never pays for it

    index = cols.memo(("relevance-index",), lambda: RelevanceIndex.of(cols.records))
    scored = index.score(query, ev.ctx.now, half_life, rule.recency_weight, rule.scorer)
    weight = number(rule.recency_weight)
    passed = scored.similarity > 0
    by_level = None
    if ev.policy.utility.model is not None:  # DESIGN §11: a level is scored on its own text, so it may match alone
        from ..utility_model import LevelIndex

        fidelity = ev.policy.fidelity
        levels = cols.memo(("level-index", tuple(fidelity)), lambda: LevelIndex.of(cols.records, fidelity))
        by_level = levels.similarity(query, "matched").max(axis=1) > 0
        passed = passed | by_level

    def explain(row: int) -> Verdict:
        found = scored.at(row)
        evidence = {"query": query, "scorer": rule.scorer, "similarity": round(found.similarity, 12),
                    "recency": round(found.recency, 12), "recency_weight": weight, "score": found.value}
        if found.similarity <= 0 and by_level is not None and by_level[row]:
            return Verdict(rule.id, True, "a level's own text matches the query (the record's does not)", evidence,
                           found.value)
        if found.similarity <= 0:
            return Verdict(rule.id, False, "shares no term with the query", evidence, found.value)
        reason = f"matches the query (similarity {found.similarity:.3f}, score {found.score:.3f})"
        return Verdict(rule.id, True, reason, evidence, found.value)

    return RuleMask(rule.id, passed, explain, scored.value)
