"""The tie-rule optimum of a count-limited instance whose Lagrangian bound is met exactly.

On the degenerate correlated classes (utility = tokens + a constant, or = tokens) every level of
every record is worth exactly its price at the bound's multipliers (λ per token, μ per kept record):
the counted DP's states are then every reachable (count, tokens) pair, and no bound prunes them.
Where an allocation meets the bound U(λ, μ), though, the optima are exactly the allocations that
keep M records (when μ > 0) with B tokens (λ > 0), each at a level of zero reduced loss, and the
tie rule asks for the one whose rows, in input order, take their highest fidelity.

:func:`tied_counted` builds it row by row: each row takes its first zero-loss option (levels in
order, delete last) after which the rows still to come can complete the count and the tokens. For
all but the last TAIL rows that test is a pair of necessary conditions (the fewest and most tokens
the rows to come can add with that many records kept), exact in what it rejects, and, where the
count is exact and the tables fit (:class:`_Edges`), exact within EDGE_BITS tokens of either end,
where the walk's preference for high fidelity drives it (the most tokens minus one is often out of
reach); for the last rows it is exact, by a DP over (count, tokens). A choice the conditions let
through but the tail cannot complete ends the search without an answer, never with a wrong one; an
answer is checked against the bound (worth more than U − ½ in integer scaled units, so no allocation
is worth more) and against the levels of nonzero loss (none could take part in an optimum).
"""

from __future__ import annotations

import numpy as np

from . import native
from .instance import Instance, Scaled, scaled_value
from .kernel import MAX_LEVELS
from .reduce import Relaxation

TAILS = (64, 128, 256, 512)  # rows of the exact tail, tried in turn
MAX_TAIL_BITS = 1 << 28  # (count, tokens) bits the tail's layers may hold in all (32 MiB)
EDGE_BITS = 64  # tokens either end of a suffix's range within which _Edges is exact
EDGE_CELLS = 1 << 21  # (row, count) cells _Edges may hold (32 bytes each: 64 MiB)


def _ranked(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each value's rank in ascending order (ties by position) and the values in that order, int64."""
    order = np.argsort(values, kind="stable")
    rank = np.empty(values.size, dtype=np.int64)
    rank[order] = np.arange(values.size)
    return rank, values[order].astype(np.int64)


class _Smallest:
    """The values of a shrinking set of rows, for the sum of the c smallest of them (a Fenwick tree
    over the values' ranks, holding counts and sums)."""

    def __init__(self, values: np.ndarray) -> None:
        self.rank, ordered = _ranked(values)
        self.sorted = ordered.tolist()
        self.size = values.size
        self.count = [0] * (self.size + 1)
        self.sum = [0] * (self.size + 1)
        # every row present: each node covers (i - lowbit(i), i]
        counts = np.ones(self.size + 1, dtype=np.int64)
        sums = np.concatenate(([0], ordered)).astype(np.int64)
        counts[0] = 0
        cum_c, cum_s = np.cumsum(counts), np.cumsum(sums)
        index = np.arange(1, self.size + 1)
        low = index - (index & -index)
        self.count[1:] = (cum_c[index] - cum_c[low]).tolist()
        self.sum[1:] = (cum_s[index] - cum_s[low]).tolist()
        self.present = self.size
        self.total = int(values.sum())

    def remove(self, row: int) -> None:
        i = int(self.rank[row]) + 1
        value = self.sorted[i - 1]
        self.present -= 1
        self.total -= value
        while i <= self.size:
            self.count[i] -= 1
            self.sum[i] -= value
            i += i & -i

    def smallest(self, c: int) -> int:
        """Sum of the c smallest values present (0 <= c <= present)."""
        position, total, step = 0, 0, 1 << self.size.bit_length()
        while step:
            nxt = position + step
            if nxt <= self.size and self.count[nxt] <= c:
                c -= self.count[nxt]
                total += self.sum[nxt]
                position = nxt
            step >>= 1
        return total  # (each rank holds one value: the search consumed all c)

    def largest(self, c: int) -> int:
        return self.total - self.smallest(self.present - c)


class _Edges:
    """For every suffix of rows and exact count c: the fewest and most tokens the suffix can hold
    keeping c records (each kept row at a zero-loss level, rows that must be kept kept), and which
    totals within EDGE_BITS of either end it reaches exactly (bit d: the most minus d, or the fewest
    plus d). The head's walk takes each row's highest fidelity that leaves the rest completable and so
    rides the ends of those ranges, where the totals thin out (most - 1 is often unreachable): there
    the test is exact; in between it is the range alone, as without the tables."""

    def __init__(self, level_ok: np.ndarray, delete_ok: np.ndarray, keepable: np.ndarray, tokens: np.ndarray,
                 lightest: np.ndarray, heaviest: np.ndarray, counts: int) -> None:
        n = level_ok.shape[0]
        big = np.int64(1 << 62)
        width = counts + 1
        self.counts = counts
        self.most = np.full((n + 1, width), -big, dtype=np.int64)
        self.fewest = np.full((n + 1, width), big, dtype=np.int64)
        self.below_most = np.zeros((n + 1, width), dtype=np.uint64)  # bit d: most - d reached
        self.above_fewest = np.zeros((n + 1, width), dtype=np.uint64)  # bit d: fewest + d reached
        self.most[n, 0] = self.fewest[n, 0] = 0
        self.below_most[n, 0] = self.above_fewest[n, 0] = 1
        module = native.module()
        if module is not None and level_ok.shape[1] <= MAX_LEVELS:  # the same tables, ~50x faster
            k = level_ok.shape[1]
            module.edges(n, k, np.ascontiguousarray(tokens, dtype=np.int64), np.ascontiguousarray(level_ok),
                         np.ascontiguousarray(delete_ok), np.ascontiguousarray(keepable),
                         np.ascontiguousarray(lightest, dtype=np.int64), np.ascontiguousarray(heaviest, dtype=np.int64),
                         counts, self.most, self.fewest, self.below_most, self.above_fewest)
            return
        for r in range(n - 1, -1, -1):
            # rows r.. keep at most n - r records: the counts above stay unreachable
            top = min(counts, n - r) + 1
            most, fewest = self.most[r + 1, :top], self.fewest[r + 1, :top]
            below, above = self.below_most[r + 1, :top], self.above_fewest[r + 1, :top]
            # the suffix from r + 1 with one record fewer (count c - 1 at index c)
            most_1, fewest_1 = _one_fewer(most, -big), _one_fewer(fewest, big)
            below_1, above_1 = _one_fewer(below, np.uint64(0)), _one_fewer(above, np.uint64(0))
            skip, keep = bool(delete_ok[r]), bool(keepable[r])
            new_most = np.maximum(most if skip else -big, heaviest[r] + most_1 if keep else -big)
            new_fewest = np.minimum(fewest if skip else big, lightest[r] + fewest_1 if keep else big)
            new_below = _shifted(below, new_most - most) if skip else np.zeros(top, dtype=np.uint64)
            new_above = _shifted(above, fewest - new_fewest) if skip else np.zeros(top, dtype=np.uint64)
            if keep:  # every zero-loss level's tokens at once (rows of the 2-d shifts)
                w = np.unique(tokens[r][level_ok[r]])[:, None]
                new_below |= np.bitwise_or.reduce(_shifted(below_1, new_most - w - most_1), axis=0)
                new_above |= np.bitwise_or.reduce(_shifted(above_1, w + fewest_1 - new_fewest), axis=0)
            self.most[r, :top], self.fewest[r, :top] = new_most, new_fewest
            self.below_most[r, :top], self.above_fewest[r, :top] = new_below, new_above

    def walk(self, tokens: np.ndarray, level_ok: np.ndarray, delete_ok: np.ndarray, head: int, budget: int,
             limit: int) -> tuple[np.ndarray, int, int] | None:
        """The head rows' levels, and the count and room they leave (see _walk)."""
        return _walk(self, tokens, level_ok, delete_ok, head, budget, limit)

    def start(self) -> None:
        """(The tables hold every suffix: nothing to set up or update as the walk moves on.)"""

    def passed(self, row: int) -> None:
        """(See start.)"""

    def completes(self, after: int, count: int, room: int) -> bool:
        """Whether rows after.. may hold exactly ``room`` tokens keeping ``count`` records: exact within
        EDGE_BITS of the fewest and the most, the range alone in between."""
        if count > self.counts:
            return False
        fewest, most = int(self.fewest[after, count]), int(self.most[after, count])
        if not fewest <= room <= most:
            return False
        if most - room < EDGE_BITS:
            return bool(int(self.below_most[after, count]) >> (most - room) & 1)
        if room - fewest < EDGE_BITS:
            return bool(int(self.above_fewest[after, count]) >> (room - fewest) & 1)
        return True


def _one_fewer(by_count: np.ndarray, none) -> np.ndarray:
    """The array by count c - 1 at index c (``none`` at 0), in the same dtype."""
    out = np.empty_like(by_count)
    out[0] = none
    out[1:] = by_count[:-1]
    return out


def _shifted(bits: np.ndarray, by: np.ndarray) -> np.ndarray:
    """bits << by, element by element, 0 where by is outside 0..63 (a total that far from the end
    leaves the window; where the source is unreachable, its bits are 0 whatever by is)."""
    inside = (by >= 0) & (by < EDGE_BITS)
    return np.where(inside, bits << np.where(inside, by, 0).astype(np.uint64), np.uint64(0))


def tied_counted(instance: Instance, scaled: Scaled, lp: Relaxation) -> np.ndarray | None:
    """The tie-rule optimum when an allocation meets the relaxation's bound U(λ, μ), else None (the
    bound is not met, not met by whole units, or the search could not prove its choices)."""
    n, limit = instance.n, instance.max_records
    multiplier, count_price, upper_bound = lp.multiplier, lp.count_price, lp.upper_bound
    # λ, μ above half a unit: an allocation short of B tokens or M records loses at least that much,
    # so every allocation worth more than U - 1/2 has them all (μ = 0: the count is free up to M)
    if limit is None or n == 0 or multiplier <= 0.5 or 0 < count_price <= 0.5:
        return None
    exact_count = count_price > 0.5
    values = scaled.values.astype(np.float64)
    tokens = instance.tokens
    reduced = lp.reduced[:-1].T  # (n, k): v - λ·s - μ, -inf where not usable
    row_best = lp.row_best  # at least delete's 0
    # zero loss, to the losses' rounding; the answer is checked in whole units below, so a level of a
    # tiny true loss let in here can cost an answer, never make a wrong one
    magnitude = float(np.abs(values[scaled.usable]).max(initial=0.0)) + multiplier * float(tokens.max(initial=0))
    tolerance = max(0.25 / n, 16 * np.finfo(np.float64).eps * (magnitude + count_price + float(row_best.max())))
    loss = row_best[:, None] - reduced
    level_ok = scaled.usable & (loss <= tolerance)
    delete_ok = row_best <= tolerance
    keepable = level_ok.any(axis=1)
    if not (keepable | delete_ok).all():
        return None
    budget = instance.budget
    big = np.iinfo(np.int64).max // (4 * max(n, 1))
    lightest = np.where(level_ok, tokens, big).min(axis=1)
    heaviest = np.where(level_ok, tokens, -1).max(axis=1)

    # the ends of the suffixes' ranges, exactly, where the count is exact and the tables fit
    counts = min(limit, n)
    # (the tables' sums stay clear of the ±2**62 sentinels where all rows' heaviest levels sum below 2**60)
    edges = _Edges(level_ok, delete_ok, keepable, tokens, lightest, heaviest, counts) if (
        exact_count and (n + 1) * (counts + 1) <= EDGE_CELLS and int(heaviest.clip(0).sum()) < 1 << 60) else None
    ends = edges if edges is not None else _Ranges(delete_ok, keepable, lightest, heaviest, exact_count)
    choice = None
    for tail in TAILS:
        choice = _build(instance, level_ok, delete_ok, ends, min(tail, n), budget, limit, exact_count)
        if choice is not None or tail >= n:
            break
    if choice is None:
        return None
    # checks: the bound is met to within half a unit (so nothing is worth more), and no level of
    # nonzero loss is within the answer's distance to the bound (so no optimum uses one)
    value = scaled_value(scaled, choice)
    slack = upper_bound - value
    # U's rounding in floats, bounded: each reduced value is three roundings of terms below magnitude +
    # μ, their maximum is exact, their pairwise sum over n rows adds log2(n) + 1 roundings of the sum of
    # their sizes, and U's own sum three more (64 ulps of U, as before, passed the half unit at 100,000
    # records, where λ·B makes most of U)
    rounding = np.finfo(np.float64).eps * (3 * n * (magnitude + count_price) + (np.log2(n) + 2) * float(
        np.abs(row_best).sum()) + 3 * abs(upper_bound))
    if slack > 0.5 - rounding:
        return None
    outside = np.concatenate((loss[scaled.usable & ~level_ok], row_best[~delete_ok]))
    if outside.size and float(outside.min()) <= slack + rounding:
        return None
    return choice


class _Ranges:
    """The rows after the walk's place: the fewest and most tokens they can add keeping a count of
    records (or at most that many, where the count is free), by Fenwick trees over the free rows'
    lightest and heaviest levels: necessary conditions only. Each walk starts the trees afresh and
    reports each row it passes (one instance serves every tail tried); the compiled module walks the
    head rows itself (``ranges_walk``, the same choices)."""

    def __init__(self, delete_ok: np.ndarray, keepable: np.ndarray, lightest: np.ndarray, heaviest: np.ndarray,
                 exact_count: bool) -> None:
        n = delete_ok.size
        must = keepable & ~delete_ok  # rows kept in every zero-loss allocation
        free = keepable & delete_ok
        # suffix sums over the rows that must be kept: count, fewest and most tokens
        self.must = [np.concatenate((np.cumsum(column[::-1])[::-1], [0])).astype(np.int64) for column in (
            must, np.where(must, lightest, 0), np.where(must, heaviest, 0))]
        free_rows = np.flatnonzero(free)
        self.slot = np.full(n, -1, dtype=np.int64)
        self.slot[free_rows] = np.arange(free_rows.size)
        self.free_light, self.free_heavy = lightest[free_rows], heaviest[free_rows]
        self.exact_count = exact_count
        self.ranked: tuple[np.ndarray, ...] | None = None  # the compiled walk's ranks and sorted values

    def walk(self, tokens: np.ndarray, level_ok: np.ndarray, delete_ok: np.ndarray, head: int, budget: int,
             limit: int) -> tuple[np.ndarray, int, int] | None:
        """The head rows' levels (-1 delete) and the count and room they leave, or None (see _walk)."""
        module = native.module()
        if module is None or tokens.shape[1] > MAX_LEVELS:
            return _walk(self, tokens, level_ok, delete_ok, head, budget, limit)
        if self.ranked is None:  # (once for every tail the caller tries)
            self.ranked = (*_ranked(self.free_light), *_ranked(self.free_heavy))
        n, k = tokens.shape
        choice = np.full(n, -1, dtype=np.int64)
        left = module.ranges_walk(
            n, k, np.ascontiguousarray(tokens, dtype=np.int64), np.ascontiguousarray(level_ok),
            np.ascontiguousarray(delete_ok), *self.must, self.slot, *self.ranked, head, budget, limit,
            self.exact_count, choice)
        return None if left is None else (choice[:head], *left)

    def start(self) -> None:
        """The Fenwick trees of the walk in Python (every free row present)."""
        self.light, self.heavy = _Smallest(self.free_light), _Smallest(self.free_heavy)
        self.slot_of = self.slot.tolist()
        self.must_count, self.must_light, self.must_heavy = (column.tolist() for column in self.must)

    def passed(self, row: int) -> None:
        if self.slot_of[row] >= 0:
            self.light.remove(self.slot_of[row])
            self.heavy.remove(self.slot_of[row])

    def completes(self, after: int, count: int, room: int) -> bool:
        """Necessary: the rows not yet passed (``after``..) can add exactly ``room`` tokens keeping
        ``count`` records (or at most ``count``, where the count is free)."""
        extra = count - self.must_count[after]
        if extra < 0:
            return False
        if not self.exact_count:
            low = self.must_light[after]
            high = self.must_heavy[after] + self.heavy.largest(min(extra, self.heavy.present))
        else:
            if extra > self.light.present:
                return False
            low = self.must_light[after] + self.light.smallest(extra)
            high = self.must_heavy[after] + self.heavy.largest(extra)
        return low <= room <= high


def _walk(ends: _Ranges | _Edges, tokens: np.ndarray, level_ok: np.ndarray, delete_ok: np.ndarray, head: int,
          budget: int, limit: int) -> tuple[np.ndarray, int, int] | None:
    """Rows 0..head-1, each at its first zero-loss option (levels in order, delete last) after which
    ``ends`` says the rest can complete the count and the tokens: their levels (-1 delete) and the count
    and room left, or None where a row finds no completion (an earlier choice was let through)."""
    ends.start()

    def completes(after: int, count: int, room: int) -> bool:
        return room >= 0 and count >= 0 and ends.completes(after, count, room)

    choice = np.full(head, -1, dtype=np.int64)
    count, room = limit, budget
    ok_rows = level_ok[:head].tolist()
    token_rows = tokens[:head].tolist()
    delete_rows = delete_ok[:head].tolist()
    for row in range(head):
        ends.passed(row)
        for level, allowed in enumerate(ok_rows[row]):
            if allowed and completes(row + 1, count - 1, room - token_rows[row][level]):
                choice[row] = level
                count, room = count - 1, room - token_rows[row][level]
                break
        else:
            if not (delete_rows[row] and completes(row + 1, count, room)):
                return None
    return choice, count, room


def _build(instance: Instance, level_ok: np.ndarray, delete_ok: np.ndarray, ends: _Ranges | _Edges, tail: int,
           budget: int, limit: int, exact_count: bool) -> np.ndarray | None:
    """Rows 0..n-tail-1 by ``ends``' test (necessary conditions, exact near the ends of the ranges
    with _Edges), the last ``tail`` rows by the exact DP."""
    n = instance.n
    head = n - tail
    walked = ends.walk(instance.tokens, level_ok, delete_ok, head, budget, limit)
    if walked is None:
        return None
    choice = np.full(n, -1, dtype=np.int64)
    choice[:head], count, room = walked
    tail_choice = _tail(level_ok[head:], delete_ok[head:], instance.tokens[head:], count, room, exact_count)
    if tail_choice is None:
        return None
    choice[head:] = tail_choice
    return choice


def _tail(level_ok: np.ndarray, delete_ok: np.ndarray, tokens: np.ndarray, count: int, room: int,
          exact_count: bool) -> np.ndarray | None:
    """The rows' first options, in order, that keep ``count`` records (at most ``count``, where the
    count is free) with exactly ``room`` tokens, by a DP over (count, tokens); None where none do or
    the DP would pass MAX_TAIL_BITS."""
    rows = level_ok.shape[0]
    if room < 0 or count < 0:
        return None
    # reach[r][c] has bit w where rows r.. can keep c records with w tokens; where the count is free
    # and cannot bind, one count (index 0) stands for all
    flat = not exact_count and count >= rows
    counts = 1 if flat else min(count, rows) + 1
    width = room + 1
    if (rows + 1) * counts * width > MAX_TAIL_BITS:
        return None
    mask = (1 << width) - 1
    ok_rows, token_rows, delete_rows = level_ok.tolist(), tokens.tolist(), delete_ok.tolist()
    reach: list[list[int]] = [[0] * counts for _ in range(rows + 1)]
    reach[rows][0] = 1
    for r in range(rows - 1, -1, -1):
        before, now = reach[r + 1], reach[r]
        shifts = [token_rows[r][level] for level, allowed in enumerate(ok_rows[r]) if allowed]
        for c in range(counts):
            bits = before[c] if delete_rows[r] else 0
            if flat or c:
                for shift in shifts:
                    bits |= before[c if flat else c - 1] << shift
            now[c] = bits & mask

    def completes(after: list[int], c: int, w: int) -> bool:
        if w < 0 or c < 0:
            return False
        if flat:
            return bool(after[0] >> w & 1)
        if exact_count:
            return c < counts and bool(after[c] >> w & 1)
        return any(after[d] >> w & 1 for d in range(min(c, counts - 1) + 1))

    if not completes(reach[0], count, room):
        return None
    choice = np.full(rows, -1, dtype=np.int64)
    for r in range(rows):
        for level, allowed in enumerate(ok_rows[r]):
            if allowed and completes(reach[r + 1], count - 1, room - token_rows[r][level]):
                choice[r] = level
                count, room = count - 1, room - token_rows[r][level]
                break
        else:  # delete: the DP says some option completes, and no level did
            assert delete_rows[r] and completes(reach[r + 1], count, room), "the tail DP lost its own completion"
    return choice
