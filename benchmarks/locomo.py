"""Recall of real evidence on LoCoMo: greedy against exact with the utility model (DESIGN §11).

    python benchmarks/locomo.py --data ../shared/data/locomo-dev [--budgets 50,100,200]
    python benchmarks/locomo.py --data ../shared/data/locomo-dev --fit-default

Each conversation file becomes one tenant-free record set, built here (an evaluation, not a
feature): one record per turn (``speaker: text``, RFC 3339 time = the session's date plus the
turn's position in seconds, session ``session_N``); with levels, a turn that observation facts
cite also offers a ``summary`` level holding those facts' text (a fact citing several turns is
offered with each). Its answerable questions (categories 1-4) are the labelled queries, asked a
day after the last session; a question's recall is the share of its evidence turns the
selection holds, averaged over questions.

Rows: greedy on raw turns (memsolve's own greedy, by relevance); exact with the old utility
exp((s − s_best)/T); exact with the built-in default model; exact calibrated (a model fitted by
``memsolve.calibrate`` on the other conversations: cross-validated by conversation); the same
with observation levels; and with each observation fact a record of its own that ``covers``
the turns it cites (greedy and exact calibrated). ``--fit-default`` fits on every conversation and prints the
coefficients of :data:`memsolve.utility_model.DEFAULT_MODEL`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

from memsolve import Selector
from memsolve.calibrate import LabelledQuery, LabelledSet, features_used, fit_model, recall, with_model
from memsolve.policies.load import policy_from_text
from memsolve.records import load_records

POLICY = """\
apiVersion: memsolve/v1
kind: MemoryPolicy
metadata: {{name: locomo}}
budget: {{tokens: {budget}}}
fidelity: [raw, summary]
rules:
  - relevance: {{scorer: {scorer}}}
utility: {{from: relevance{model}}}
solver: {{engine: dp, cross_check: none}}
"""


def policy(budget: int, scorer: str = "bm25", model: str | None = None):  # noqa: ANN201
    return policy_from_text(POLICY.format(budget=budget, scorer=scorer, model=f", model: {model}" if model else ""))


def session_time(text: str) -> datetime:
    return datetime.strptime(text, "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)


def rfc3339(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def conversation(path: Path, levels: bool, facts_as_records: bool = False) -> LabelledSet:
    """One LoCoMo file as records and labelled queries; ``levels``: observation facts as a
    summary level of the turns they cite; ``facts_as_records``: each fact a record of its own
    that ``covers`` the turns it cites (dated at its session)."""
    data = json.loads(path.read_text("utf-8"))
    sessions = sorted(int(k.split("_")[1]) for k in data if k.startswith("session_") and k.count("_") == 1)
    facts: dict[str, list[str]] = {}
    if levels:
        for n in sessions:
            for per_speaker in (data.get(f"session_{n}_observation") or {}).values():
                for text, cites in per_speaker:
                    for dia in [cites] if isinstance(cites, str) else cites:
                        facts.setdefault(dia, []).append(text)
    records, last = [], None
    for n in sessions:
        start = session_time(data[f"session_{n}_date_time"])
        last = start
        for i, turn in enumerate(data[f"session_{n}"]):
            text = f"{turn['speaker']}: {turn['text']}"
            record = {"id": turn["dia_id"], "timestamp": rfc3339(start + timedelta(seconds=i)),
                      "session": f"session_{n}", "text": text}
            if turn["dia_id"] in facts:
                summary = " ".join(facts[turn["dia_id"]])
                record["representations"] = {"raw": {"text": text}, "summary": {"text": summary}}
            records.append(record)
        if facts_as_records:
            observed = (data.get(f"session_{n}_observation") or {}).values()
            for i, (text, cites) in enumerate(fact for per_speaker in observed for fact in per_speaker):
                records.append({"id": f"F{n}:{i}", "timestamp": rfc3339(start), "session": f"session_{n}",
                                "text": text, "covers": [cites] if isinstance(cites, str) else list(cites)})
    assert last is not None
    now = rfc3339(last + timedelta(days=1))
    queries = tuple(LabelledQuery(q["question"], tuple(q["evidence"]), now) for q in data["qa"]
                    if q.get("category") in (1, 2, 3, 4) and q.get("evidence"))
    return LabelledSet(path.name, load_records(records), queries, path.name)


def mean(values: list[float]) -> float:
    return float(np.mean(values)) if values else 0.0


def timed_recall(pol, sets: list[LabelledSet], engine: str) -> tuple[float, float]:  # noqa: ANN001
    """Mean recall and median milliseconds per question."""
    values, seconds = [], []
    for s in sets:
        for q in s.queries:
            started = time.perf_counter()
            values += recall(pol, LabelledSet(s.file, s.records, (q,), s.sha256), engine)
            seconds.append(time.perf_counter() - started)
    return mean(values), 1000 * float(np.median(seconds))


def cross_validated(pol, sets: list[LabelledSet], engine: str) -> float:  # noqa: ANN001
    names = features_used(pol, sets)
    values = []
    for i, test in enumerate(sets):
        model, _, _ = fit_model(pol, [s for j, s in enumerate(sets) if j != i], names)
        values += recall(with_model(pol, model), test, engine)
    return mean(values)


def selector_ms(sets: list[LabelledSet], budget: int, model: str | None) -> tuple[int, float]:
    """The longest conversation's turns and the median ms per question of a Selector over them
    (trace none), after one warm-up select (the term indexes are built once per record set)."""
    longest = max(sets, key=lambda s: len(s.records.records))
    selector = Selector(policy(budget, model=model), longest.records)
    selector.select(query="warm up", now=longest.queries[0].now, trace="none")
    seconds = []
    for q in longest.queries:
        started = time.perf_counter()
        selector.select(query=q.query, now=q.now, trace="none")
        seconds.append(time.perf_counter() - started)
    return len(longest.records.records), 1000 * float(np.median(seconds))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, type=Path, help="a folder of LoCoMo conversation files (*.json)")
    parser.add_argument("--budgets", default="50,100,200")
    parser.add_argument("--fit-default", action="store_true", help="fit the default model on every file and print it")
    args = parser.parse_args(argv)
    files = sorted(args.data.glob("*.json"))
    if not files:
        print(f"error: no *.json files in {args.data}", file=sys.stderr)
        return 2
    raw = [conversation(f, levels=False) for f in files]
    if args.fit_default:
        names = ("tfidf", "bm25", "matched", "neighbour", "log_rank", "log_tokens", "log_age")
        model, count, positives = fit_model(policy(100), raw, names)
        print(json.dumps({**model.to_dict(), "examples": count, "positives": positives}, indent=1))
        return 0
    leveled = [conversation(f, levels=True) for f in files]
    facts = [conversation(f, levels=False, facts_as_records=True) for f in files]
    questions = sum(len(s.queries) for s in raw)
    print(f"LoCoMo: {len(files)} conversations, {questions} answerable questions; recall of evidence turns")
    print(f"{'budget':>6}  {'configuration':<44} {'recall':>7}  {'ms/question':>11}")
    for budget in (int(b) for b in args.budgets.split(",")):
        rows = []
        for scorer in ("tfidf", "bm25"):
            r, ms = timed_recall(policy(budget, scorer), raw, "greedy")
            rows.append((f"greedy, raw turns, {scorer}", r, ms))
        rows.append(("exact, exp((s - best)/T), bm25", *timed_recall(policy(budget), raw, "exact")))
        rows.append(("exact, default model", *timed_recall(policy(budget, model="default"), raw, "exact")))
        rows.append(("exact, calibrated (cv by conversation)", cross_validated(policy(budget), raw, "exact"), None))
        rows.append(("greedy, observation levels, bm25", *timed_recall(policy(budget), leveled, "greedy")))
        rows.append(("exact, default model, observation levels",
                     *timed_recall(policy(budget, model="default"), leveled, "exact")))
        rows.append(("exact, calibrated, observation levels (cv)", cross_validated(policy(budget), leveled, "exact"),
                     None))
        rows.append(("greedy, facts as records (covers), bm25", *timed_recall(policy(budget), facts, "greedy")))
        rows.append(("exact, calibrated, facts as records (cv)", cross_validated(policy(budget), facts, "exact"),
                     None))
        for name, r, ms in rows:
            shown = "" if ms is None else f"{ms:.1f}"
            print(f"{budget:>6}  {name:<44} {r:>7.3f}  {shown:>11}")
        sys.stdout.flush()
    for model in ("default", None):
        turns, ms = selector_ms(raw, 100, model)
        name = "default model" if model else "no model"
        print(f"Selector, {turns} turns, 100 words, {name}: {ms:.1f} ms per question")
    return 0


if __name__ == "__main__":
    sys.exit(main())
