"""Text renderings for people (rich tables): results, frontiers, comparisons, diffs, state,
trajectories and findings. They format; they compute nothing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import IO, TYPE_CHECKING, Any

from .result import Result, describe_outcome

if TYPE_CHECKING:
    from rich.console import Console

    from .ci.compare import Comparison
    from .ci.diff import PolicyDiff
    from .ci.findings import Finding
    from .rounds.state import AgentState, RoundRow

RESULT_FORMATS = ("table", "json")

# rich is imported when a table is drawn: JSON runs (CI, agents) do not pay for its import


def _console(file: IO[str] | None, width: int = 120) -> Console:
    from rich.console import Console

    # no markup: ids, reasons and texts are the user's, and `[/x]` in an id is not a style tag
    return Console(file=file, width=width, soft_wrap=False, highlight=False, markup=False)


def _num(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.6g}"


def result_table(result: Result, file: IO[str] | None = None) -> None:
    from rich.table import Table
    from rich.text import Text

    console = _console(file)
    console.print(Text.assemble(("memsolve", "bold"), f"  policy {result.policy_name}  round {result.round}"
                                                      f"  now {result.now}"))

    cache = result.cache  # DESIGN §15: with a cache block, the selection in prompt order
    if cache is None:
        selected = Table(title="Selected", title_justify="left")
        for column in ("id", "level", "tokens", "utility"):
            selected.add_column(column, justify="right" if column in ("tokens", "utility") else "left")
        for item in result.selected:
            selected.add_row(item.id, item.level, str(item.tokens), _num(item.utility))
    else:
        selected = Table(title="Selected, in prompt order", title_justify="left")
        for column in ("#", "id", "level", "tokens", "utility", "cache"):
            selected.add_column(column, justify="right" if column in ("#", "tokens", "utility") else "left")
        for position, item in enumerate(result.in_prompt_order(), start=1):
            selected.add_row(str(position), item.id, item.level, str(item.tokens), _num(item.utility),
                             "intact prefix" if position <= cache.prefix_records else "")
    console.print(selected)

    if result.dropped:
        dropped = Table(title="Dropped by the allocation", title_justify="left")
        dropped.add_column("id")
        dropped.add_column("reason")
        for item in result.dropped:
            dropped.add_row(item.id, item.reason)
        console.print(dropped)

    if result.excluded:
        excluded = Table(title="Excluded by rules", title_justify="left")
        for column in ("id", "rule", "reason"):
            excluded.add_column(column)
        for item in result.excluded:
            excluded.add_row(item.id or "-", item.rule, item.reason)
        console.print(excluded)

    if result.other_tenants:
        console.print(f"other tenants {result.other_tenants} records (counted, not shown)")
    budget = f"{result.tokens_used} / {result.budget} tokens"
    if result.max_records is not None:
        budget += f", {len(result.selected)} / {result.max_records} records"
    console.print(f"budget     {budget}")
    console.print(f"objective  {_num(result.objective)}  (utility {_num(result.utility)})")
    p = result.price
    console.print(
        f"price      lambda {_num(p.lam)} ({_num(p.per_token)} per token), "
        f"queue {_num(p.queue_before)} -> {_num(p.queue_after)}"
    )
    s = result.solver
    line = f"solver     {s.engine}: {s.status}"
    if s.cross_check:
        agrees = {True: "agrees", False: "disagrees", None: "not run"}[s.cross_check.get("agrees")]
        line += f"; cross-check {s.cross_check['engine']} {agrees}"
    if s.greedy:
        line += f"; greedy would lose {_num(s.greedy['loss'])}"
    console.print(line)
    if cache is not None:
        for line in _cache_lines(cache):
            console.print(line)
    if result.compression is not None:
        c = result.compression
        verdict = "preserved" if c.preserved else "NOT preserved"
        console.print(
            f"compression action {c.original_action} -> {c.compressed_action}: {verdict} "
            f"(gaps {_num(c.original_gap)} / {_num(c.compressed_gap)})"
            + ("  warning: zero action gap" if c.zero_gap else "")
        )


def _cache_lines(cache: Any) -> list[str]:
    """The cache trace (a memsolve.cache.CacheTrace) in two or three lines."""
    if cache.previous is None:
        prefix = "no previous prompt"
    else:
        prefix = (f"{cache.prefix_records} of {cache.previous} previous records intact at the head "
                  f"({cache.prefix_tokens} tokens; {cache.reused_tokens} read from the cache), {cache.kept} kept")
    lines = [f"cache      {cache.provider}: {prefix}"]
    change = cache.first_change
    if change is not None:
        line = f"           first change {change['id']} {change['was']} -> {change['now']}: {change['reason']}"
        if "gain" in change:
            line += f" (gain {_num(change['gain'])})"
        lines.append(line)
    if cache.cost is not None:
        cost = cache.cost
        line = f"           input ${cost['dollars']:.6g} modelled (uncached ${cost['uncached']:.6g}"
        if "without_change" in cost:
            line += f", without the change ${cost['without_change']:.6g}"
        lines.append(line + ")")
    return lines


def frontier_table(points: Sequence[tuple[int, float]], file: IO[str] | None = None) -> None:
    from rich.table import Table

    table = Table(title="Value frontier (breakpoints)", title_justify="left")
    table.add_column("budget", justify="right")
    table.add_column("objective", justify="right")
    for budget, value in points:
        table.add_row(str(budget), _num(value))
    _console(file).print(table)


def rows_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], file: IO[str] | None = None) -> None:
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*[str(x) for x in row])
    _console(file).print(table)


def comparison_table(comparison: Comparison, file: IO[str] | None = None) -> None:
    exact, greedy = comparison.picks("exact"), comparison.picks("greedy")
    differ = set(comparison.differ)

    def cell(picks: dict, rid: str) -> str:
        chosen = picks.get(rid)
        return "-" if chosen is None else f"{chosen.level} ({chosen.tokens})"

    rows_table("Greedy vs exact", ["record", "exact", "greedy", ""],
               [(rid, cell(exact, rid), cell(greedy, rid), "differs" if rid in differ else "")
                for rid in comparison.ids], file)
    for name, r in (("exact: ", comparison.exact), ("greedy:", comparison.greedy)):
        print(f"{name} objective {r.objective:.6g}, utility {r.utility:.6g}, {r.tokens_used} tokens", file=file)
    print(f"greedy loses {comparison.greedy_loses:.6g}", file=file)


def diff_tables(report: PolicyDiff, file: IO[str] | None = None) -> None:
    rows_table("Changed outcomes", ["record", "before", "after"],
               [(c["id"], describe_outcome(c["before"]), describe_outcome(c["after"])) for c in report.changes], file)
    rows_table("Rules", ["rule", "verdict"], sorted(report.rules.items()), file)
    print(f"overall: {report.overall}", file=file)


def state_tables(states: Sequence[AgentState], next_lambda: Sequence[float | None],
                 file: IO[str] | None = None) -> None:
    for s, lam in zip(states, next_lambda, strict=True):
        line = (f"policy {s.key.policy}  tenant {s.key.tenant or '-'}  agent {s.key.agent}  "
                f"next round {s.round}  Q {s.queue}")
        if lam is not None:
            line += f"  next lambda {lam:.6g}"
        print(line, file=file)
        rows_table("Fidelity ceilings", ["record", "ceiling", "since round"],
                   [(rid, c.level, c.round) for rid, c in sorted(s.ceilings.items())], file)
        rows_table("History", ["round", "Q before", "lambda", "tokens", "occupancy", "objective", "Q after", "refresh"],
                   [(h.round, f"{h.queue_before:.4g}", f"{h.lam:.4g}", f"{h.tokens_used}/{h.budget}",
                     f"{h.occupancy:.3f}", f"{h.objective:.6g}", f"{h.queue_after:.4g}", "yes" if h.refresh else "")
                    for h in s.history], file)


def trajectory_table(title: str, rows: Sequence[RoundRow], file: IO[str] | None = None) -> None:
    rows_table(title, ["t", "Q", "lambda", "tokens", "occupancy", "objective", "levels"],
               [(r.round, f"{r.queue_before:.4g}", f"{r.lam:.4g}", f"{r.tokens_used}/{r.budget}",
                 f"{r.occupancy:.3f}", f"{r.objective:.6g}", " ".join(f"{k}={v}" for k, v in sorted(r.levels.items())))
                for r in rows], file)


def findings_table(findings: Sequence[Finding], file: IO[str] | None = None) -> None:
    """The failed findings (nothing when every finding passed). The location is never cut or
    folded: its column keeps its full width, the message wraps, and a table that cannot fit the
    usual width is printed wider rather than cropped."""
    from rich.measure import Measurement
    from rich.table import Table

    from .ci.locations import location_text

    rows = [(f.suite, f.name, f.level.upper(), f.code, f.message, location_text(f.location))
            for f in findings if not f.passed]
    if not rows:
        return
    table = Table(title="Findings", title_justify="left")
    for column in ("suite", "case", "result", "code"):
        table.add_column(column, overflow="fold")
    table.add_column("message", ratio=1, min_width=20, overflow="fold")
    table.add_column("where", no_wrap=True)
    for row in rows:
        table.add_row(*row)
    console = _console(file)
    needed = Measurement.get(console, console.options.update_width(10_000), table).minimum
    if needed > console.width:
        console = _console(file, width=needed)
    console.print(table)


def capture(draw: Any, *args: Any) -> str:
    """What ``draw(*args, file)`` prints, as text."""
    import io

    buffer = io.StringIO()
    draw(*args, buffer)
    return buffer.getvalue()
