"""Replay LoCoMo conversations turn by turn and price each prompt's cache (DESIGN §15, issue 20).

    python benchmarks/cache_replay.py --data ../shared/data/locomo-dev [--budget 500] \
        [--plot docs/cache/recall_cost.png]

Each conversation is one agent. Its turns become records as the conversation goes (one record per
turn, ``speaker: text``, tokens = words, timestamp = the turn's position); each answerable question
(categories 1-4) is asked once the session holding its last evidence turn has happened, in that
order, and sees every turn so far. A question's recall is the share of its evidence turns the
selection holds. The prompt is a fixed part (``--prefix-tokens``: system prompt, tools; always
the same) followed by the selected records; the question comes after and is not priced.

Variants, each replayed over the same turns:

- ``plain``: memsolve as before, the records in input order;
- ``ordering only``: the same selections in prompt order (unchanged first, in the previous order);
- ``ordering + cost V``: a ``cache`` block (Anthropic 5-minute pricing, $``--input-price``/M input
  tokens, V value per dollar) in the objective, solved exactly;
- ``frozen per session b``: the selection made at a session's first question (budget b) kept for
  every question asked in that session.

Per variant: mean recall; prefix hit rate (memory tokens read from the cache / memory tokens sent,
turns after a conversation's first); kept (memory tokens of records kept unchanged from the
previous turn, wherever they stand / memory tokens sent: what a perfect order could reuse);
records switched per turn (entered or left); modelled input dollars of the memories per 1,000
turns for Anthropic (5-minute) and OpenAI pricing (the same prompts priced by
:func:`memsolve.cache.dollars`; the fixed prefix counts toward the provider's minimum and blocks,
its own cost, the same in every variant, is left out); the median milliseconds per turn (a frozen
turn after the first costs nothing). The operating point is the largest V whose recall is within
0.02 of plain. ``--refine`` (on by default) does what a user tuning V does after the sweep: it
tries the whole numbers between the largest V within 0.02 and the next V of the sweep (at most
``--refine-steps`` of them, evenly spaced) and takes the largest within 0.02 of all. The plot
shows recall against Anthropic dollars for the V sweep and for frozen-per-session over budgets.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

import memsolve
from memsolve.cache import PROVIDERS, Placed, dollars, rates, reused
from memsolve.policies.model import CacheSettings
from memsolve.selector import Selector

POLICY = """apiVersion: memsolve/v1
kind: MemoryPolicy
metadata: {{name: cache-replay}}
budget: {{tokens: {budget}}}
fidelity: [raw]
rules:
  - relevance: {{recency_weight: 0}}
utility: {{from: relevance, {utility}retention: {{raw: 1.0}}}}
solver: {{engine: dp, cross_check: {check}}}
{cache}"""


@dataclass(frozen=True)
class Question:
    query: str
    evidence: frozenset[str]
    at: int  # turns visible when it is asked
    session: int  # the session after which it is asked


@dataclass(frozen=True)
class Conversation:
    name: str
    turns: tuple[dict, ...]
    questions: tuple[Question, ...]


def conversation(path: Path) -> Conversation:
    data = json.loads(path.read_text())
    body = data.get("conversation", data)
    sessions = sorted((int(m.group(1)), key) for key in body if (m := re.fullmatch(r"session_(\d+)", key)))
    turns, end_of, where = [], {}, {}
    for number, key in sessions:
        for turn in body[key]:
            where[turn["dia_id"]] = number
            turns.append({"id": turn["dia_id"], "timestamp": len(turns), "session": key,
                          "text": f"{turn['speaker']}: {turn['text']}"})
        end_of[number] = len(turns)
    questions = []
    for qa in data["qa"]:
        evidence = frozenset(e for e in qa.get("evidence", []) if e in where)
        if qa.get("category") == 5 or not evidence:
            continue
        last = max(where[e] for e in evidence)
        questions.append(Question(qa["question"], evidence, end_of[last], last))
    questions.sort(key=lambda q: q.at)  # stable: the dataset's order within a session
    return Conversation(path.stem, tuple(turns), tuple(questions))


@dataclass
class Tally:
    """One variant's replay, turn by turn."""

    recall: list[float] = field(default_factory=list)
    sent: list[int] = field(default_factory=list)  # memory tokens sent
    intact: list[int] = field(default_factory=list)  # memory tokens in the intact prefix
    kept: list[int] = field(default_factory=list)  # memory tokens of records kept unchanged, anywhere
    warm: list[bool] = field(default_factory=list)
    switches: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)

    def add(self, prompt: list[Placed], previous: list[Placed] | None, evidence: frozenset[str],
            seconds: float) -> None:
        ids = {p.id for p in prompt}
        self.recall.append(len(ids & evidence) / len(evidence))
        self.sent.append(sum(p.tokens for p in prompt))
        head = 0
        if previous is not None:
            while head < min(len(prompt), len(previous)) and prompt[head] == previous[head]:
                head += 1
        self.intact.append(sum(p.tokens for p in prompt[:head]))
        before = set() if previous is None else set(previous)
        self.kept.append(sum(p.tokens for p in prompt if p in before))
        self.warm.append(previous is not None)
        self.switches.append(0 if previous is None else len(ids ^ {p.id for p in previous}))
        self.seconds.append(seconds)

    def dollars_per_1000(self, settings: CacheSettings) -> float:
        """Modelled input dollars of the memories per 1,000 turns: the fixed prefix counts toward the
        provider's minimum and blocks, its own cost (the same for every variant) is left out."""
        r = rates(settings)
        fixed = settings.prefix_tokens
        total = 0.0
        for sent, intact, warm in zip(self.sent, self.intact, self.warm, strict=True):
            read = reused(r, fixed + intact) if warm else 0
            total += dollars(settings, sent, read) - dollars(settings, 0, min(read, fixed))
        return 1000 * total / len(self.sent)

    def row(self, name: str, prefix_tokens: int, input_price: float) -> dict:
        warm = [(i, s) for i, s, w in zip(self.intact, self.sent, self.warm, strict=True) if w]
        return {
            "variant": name,
            "recall": statistics.fmean(self.recall),
            "hit": sum(i for i, _ in warm) / max(1, sum(s for _, s in warm)),
            "kept": sum(k for k, w in zip(self.kept, self.warm, strict=True) if w) / max(1, sum(s for _, s in warm)),
            "tokens": statistics.fmean(self.sent),
            "switches": statistics.fmean(self.switches),
            "anthropic": self.dollars_per_1000(CacheSettings("anthropic-5m", input_price, 0.0,
                                                             prefix_tokens=prefix_tokens)),
            "openai": self.dollars_per_1000(CacheSettings("openai", input_price, 0.0, prefix_tokens=prefix_tokens)),
            "ms": 1000 * statistics.median(self.seconds),  # the median: the machine may be shared
        }


def replay(convs: list[Conversation], policy: memsolve.Policy, mode: str) -> Tally:
    """``mode``: plain (input order), ordered (prompt order), frozen (per session)."""
    tally = Tally()
    for conv in convs:
        selector, seen, previous = None, 0, None
        frozen: tuple[int, list[Placed]] | None = None
        for q in conv.questions:
            if selector is None:
                selector = Selector(policy, list(conv.turns[:q.at]))
            elif q.at > seen:
                selector.add(list(conv.turns[seen:q.at]))
            seen = max(seen, q.at)
            started = time.perf_counter()
            if mode == "frozen" and frozen is not None and frozen[0] == q.session:
                prompt = frozen[1]
            else:
                result = selector.select(query=q.query, now=seen, trace="none")
                chosen = result.in_prompt_order() if mode != "plain" else tuple(result.selected)
                prompt = [Placed.of(c) for c in chosen]
                frozen = (q.session, prompt)
            tally.add(prompt, previous, q.evidence, time.perf_counter() - started)
            previous = prompt
    return tally


def timing(convs: list[Conversation], plain: memsolve.Policy, cached: memsolve.Policy) -> tuple[float, float]:
    """Median seconds per turn of plain and cached selection, the two timed alternately on every
    question (each its own Selector, so each keeps its own prompt order): a shared machine's load
    falls on both alike."""
    times: dict[str, list[float]] = {"plain": [], "cached": []}
    for conv in convs:
        selectors: dict[str, Selector] = {}
        seen = 0
        for q in conv.questions:
            for name, policy in (("plain", plain), ("cached", cached)):
                if name not in selectors:
                    selectors[name] = Selector(policy, list(conv.turns[:q.at]))
                elif q.at > seen:
                    selectors[name].add(list(conv.turns[seen:q.at]))
                started = time.perf_counter()
                result = selectors[name].select(query=q.query, now=q.at, trace="none")
                result.in_prompt_order()
                times[name].append(time.perf_counter() - started)
            seen = max(seen, q.at)
    return statistics.median(times["plain"]), statistics.median(times["cached"])


def policy_for(budget: int, utility: str, cache: str = "", check: str = "none") -> memsolve.Policy:
    """``utility``: ``model`` (the built-in utility model, DESIGN §11) or a temperature T for
    exp((s − s_best)/T)."""
    spec = "model: default, " if utility == "model" else f"temperature: {float(utility):g}, "
    return memsolve.policy_from_text(POLICY.format(budget=budget, utility=spec, cache=cache, check=check))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="folder of LoCoMo conversation files")
    parser.add_argument("--budget", type=int, default=500, help="memory tokens (words) per turn")
    parser.add_argument("--utility", default="model",
                        help="`model` (the built-in utility model: a probability of holding evidence) or a "
                             "temperature for exp((s - s_best)/T)")
    parser.add_argument("--prefix-tokens", type=int, default=2000, help="fixed prompt before the memories")
    parser.add_argument("--input-price", type=float, default=3.0, help="dollars per million input tokens")
    parser.add_argument("--values", default="2,5,10,20,30,40,50,70,100,300,1000", help="value per dollar sweep")
    parser.add_argument("--refine", action=argparse.BooleanOptionalAction, default=True,
                        help="refine the sweep between the operating point and the next value")
    parser.add_argument("--refine-steps", type=int, default=9, help="values tried by the refinement, at most")
    parser.add_argument("--limit", type=int, default=0, help="questions per conversation (0: all)")
    parser.add_argument("--check", default="none", choices=["none", "dp"],
                        help="cross-check every cache solve with the flag DP (slower)")
    parser.add_argument("--plot", type=Path, help="write the recall-vs-cost plot here (PNG)")
    args = parser.parse_args()

    convs = [conversation(p) for p in sorted(args.data.glob("*.json"))]
    if args.limit:
        convs = [Conversation(c.name, c.turns, c.questions[:args.limit]) for c in convs]
    print(f"{len(convs)} conversations, {sum(len(c.questions) for c in convs)} questions, budget {args.budget} "
          f"words, fixed prefix {args.prefix_tokens}, ${args.input_price:g}/M input "
          f"(Anthropic 5m: read x{PROVIDERS['anthropic-5m'].read:g}, write x{PROVIDERS['anthropic-5m'].write:g})")
    plain = policy_for(args.budget, args.utility)
    rows = [replay(convs, plain, "plain").row("plain (input order)", args.prefix_tokens, args.input_price),
            replay(convs, plain, "ordered").row("ordering only", args.prefix_tokens, args.input_price)]
    sweep: list[tuple[float, dict]] = []

    def run(value: float) -> None:
        block = (f"cache: {{provider: anthropic-5m, input_price: {args.input_price}, value_per_dollar: {value:g}, "
                 f"prefix_tokens: {args.prefix_tokens}}}\n")
        row = replay(convs, policy_for(args.budget, args.utility, block, args.check), "ordered").row(
            f"ordering + cost V={value:g}", args.prefix_tokens, args.input_price)
        sweep.append((value, row))

    for value in [float(v) for v in args.values.split(",")]:
        run(value)
    if args.refine:
        for value in refinement(sweep, rows[0]["recall"] - 0.02, args.refine_steps):
            run(value)
    sweep.sort(key=lambda vr: vr[0])
    rows.extend(row for _, row in sweep)
    frozen = []
    for fraction in (0.25, 0.5, 0.75, 1.0):
        budget = max(1, round(args.budget * fraction))
        row = replay(convs, policy_for(budget, args.utility), "frozen").row(
            f"frozen per session, budget {budget}", args.prefix_tokens, args.input_price)
        rows.append(row)
        frozen.append(row)

    base, ordered = rows[0], rows[1]
    print("\n| variant | recall | prefix hit | kept | tokens/turn | switches/turn | $/1k turns Anthropic 5m | "
          "$/1k turns OpenAI | ms/turn |\n|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['variant']} | {r['recall']:.3f} | {r['hit']:.1%} | {r['kept']:.1%} | {r['tokens']:.0f} | "
              f"{r['switches']:.2f} | {r['anthropic']:.3f} | {r['openai']:.3f} | {r['ms']:.1f} |")
    near = [(v, r) for v, r in sweep if r["recall"] >= base["recall"] - 0.02]
    if near:
        value, best = max(near, key=lambda vr: vr[0])
        saving = 1 - best["anthropic"] / ordered["anthropic"]
        block = (f"cache: {{provider: anthropic-5m, input_price: {args.input_price}, value_per_dollar: {value:g}, "
                 f"prefix_tokens: {args.prefix_tokens}}}\n")
        fast, slow = timing(convs, plain, policy_for(args.budget, args.utility, block, args.check))
        print(f"\noperating point: V={value:g}, recall {best['recall']:.3f} (plain {base['recall']:.3f}), "
              f"Anthropic ${best['anthropic']:.3f} vs ${ordered['anthropic']:.3f} per 1k turns with ordering only: "
              f"{saving:.1%} lower; median per turn, timed alternately: {1000 * slow:.2f} ms against plain's "
              f"{1000 * fast:.2f} ms ({slow / fast:.2f}x)")
    else:
        print("\nno value per dollar in the sweep keeps recall within 0.02 of plain")
    if args.plot:
        coarse = {float(v) for v in args.values.split(",")}
        plot(args.plot, base, ordered, sweep, frozen, coarse, value if near else None)
        print(f"plot: {args.plot}")
    return 0


def refinement(sweep: list[tuple[float, dict]], floor: float, steps: int) -> list[float]:
    """Whole values of V strictly between the largest swept V whose recall is at least ``floor``
    and the next swept V (at most ``steps``, evenly spaced): the finer sweep a user runs next."""
    values = sorted(v for v, _ in sweep)
    within = [v for v, r in sweep if r["recall"] >= floor]
    if not within or max(within) == values[-1]:
        return []
    low = max(within)
    high = values[values.index(low) + 1]
    inner = list(range(math.floor(low) + 1, math.ceil(high)))
    if len(inner) > steps:
        inner = sorted({inner[round(i * (len(inner) - 1) / (steps - 1))] for i in range(steps)}) if steps > 1 else []
    return [float(v) for v in inner if low < v < high]


def plot(path: Path, base: dict, ordered: dict, sweep: list[tuple[float, dict]], frozen: list[dict],
         labelled: set[float], point: float | None) -> None:
    """Recall against Anthropic dollars; the values of ``labelled`` (the coarse sweep) annotated,
    the operating point ``point`` marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.plot([r["anthropic"] for _, r in sweep], [r["recall"] for _, r in sweep], "o-",
            label="ordering + cache cost (sweep of value per dollar)")
    for value, r in sweep:
        if value == point:
            ax.plot([r["anthropic"]], [r["recall"]], "*", markersize=14, color="black", zorder=3,
                    label=f"operating point (V={value:g}, recall within 0.02 of plain)")
        if value not in labelled:
            continue
        ax.annotate(f"{value:g}", (r["anthropic"], r["recall"]), textcoords="offset points", xytext=(4, 4), fontsize=7)
    ax.plot([r["anthropic"] for r in frozen], [r["recall"] for r in frozen], "s--",
            label="frozen per session (budgets)")
    ax.plot([base["anthropic"]], [base["recall"]], "x", markersize=9, label="plain (input order)")
    ax.plot([ordered["anthropic"]], [ordered["recall"]], "^", markersize=8, label="ordering only")
    ax.set_xlabel("modelled input $ per 1,000 turns (Anthropic 5-minute cache)")
    ax.set_ylabel("evidence recall")
    ax.set_title("LoCoMo dev replay: recall against prompt cost")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    raise SystemExit(main())
