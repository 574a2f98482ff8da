"""The count-limited tie-rule optimum where the bound is met (solver/tied.py): the dense DP's allocation
wherever it answers, an answer wherever the exact tail covers every row, and the degenerate correlated
classes at 1,000 records, which the counted DP's states overflow, answered at the bound."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memsolve.solver import core, make_instance, native, scale, tied
from memsolve.solver.dp import solve_dp
from memsolve.solver.instance import scaled_value
from memsolve.solver.reduce import relax


def _correlated(seed: int, n: int, top: int = 12):
    """Utility = tokens + a constant (0: subset-sum), a random budget and count limit."""
    rng = np.random.default_rng(seed)
    k = int(rng.integers(1, 5))
    tokens = rng.integers(1, top, size=(n, k))
    utility = (tokens + int(rng.integers(0, 4))).astype(float)
    budget = int(rng.integers(0, tokens.max(axis=1).sum() + 1))
    return make_instance(tokens, utility, budget, max_records=int(rng.integers(0, n + 1)))


def _tied(inst):
    scaled = scale(inst)
    lp = relax(inst, scaled)
    return scaled, lp, tied.tied_counted(inst, scaled, lp)


@pytest.mark.parametrize("tails", [(2, 4), (1, 3, 9), (64,)])
def test_an_answer_is_the_dense_dps_and_a_tail_over_every_row_always_answers(tails, monkeypatch) -> None:
    """Short tails leave the first rows to the necessary conditions (an answer must still be the tie
    rule's, or none); a tail over every row is exact, so wherever an allocation meets the bound to the
    unit and λ, μ are over half a unit, it answers."""
    monkeypatch.setattr(tied, "TAILS", tails)
    answered = 0
    for seed in range(300):
        inst = _correlated(seed, int(np.random.default_rng(seed + 1000).integers(1, 30)))
        scaled, lp, got = _tied(inst)
        expected = solve_dp(inst, scaled).choice
        if got is not None:
            answered += 1
            assert got.tolist() == expected.tolist(), seed
        elif tails == (64,):
            meets = scaled_value(scaled, expected) >= lp.upper_bound - 0.25
            assert not (meets and lp.multiplier > 0.5 and not 0 < lp.count_price <= 0.5), seed
    assert answered > 60


def test_no_answer_where_the_bound_is_not_met() -> None:
    """Three records of 3 tokens worth 4 each, 5 tokens, 2 records: the bound holds 5/3 records (6.7),
    one record fits (4)."""
    inst = make_instance([[3], [3], [3]], [[4.0], [4.0], [4.0]], 5, max_records=2)
    scaled, lp, got = _tied(inst)
    assert lp.upper_bound > scaled_value(scaled, solve_dp(inst, scaled).choice) + 0.5
    assert got is None


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 50), max_size=30), st.data())
def test_smallest_sums_follow_removals(values, data) -> None:
    smallest = tied._Smallest(np.array(values, dtype=np.int64))
    present = list(range(len(values)))
    for row in data.draw(st.permutations(range(len(values)))):
        ordered = sorted(values[i] for i in present)
        c = data.draw(st.integers(0, len(ordered)))
        assert smallest.smallest(c) == sum(ordered[:c])
        assert smallest.largest(c) == sum(ordered[len(ordered) - c:])
        smallest.remove(row)
        present.remove(row)
    assert smallest.present == 0 and smallest.smallest(0) == 0


def _pisinger(kind: str, n: int, limit: int):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from generators import generate

    tokens, utility, budget = generate(kind, n, 1)
    return make_instance(tokens, utility, int(budget), max_records=limit)


@pytest.mark.parametrize("kind, limit", [("strongly", 600), ("strongly", 700), ("strongly", 900), ("strongly", 950),
                                         ("subset-sum", 599), ("subset-sum", 700)])
def test_degenerate_classes_are_met_at_the_bound(kind, limit) -> None:
    """Issue 18's strongly correlated and subset-sum classes, 1,000 records, the count limit binding with
    the budget: every level worth exactly its price, the counted DP's states overflow, and the answer
    keeps the limit and the budget exactly and is worth the bound (so no allocation is worth more).
    Strongly correlated at 600 and 900 records (60 and 90 % of the unlimited optimum's) walks the most
    tokens' end, where only _Edges finds the totals reached."""
    inst = _pisinger(kind, 1000, limit)
    scaled = scale(inst)
    found = core._solve_counted(inst, scaled)
    assert found is not None
    solution, red = found
    assert "met at the bound" in solution.detail and solution.status == "optimal"
    assert solution.scaled_objective == round(red.upper_bound)  # the proof: worth the bound
    assert solution.tokens_used == inst.budget
    assert solution.count == limit if kind == "strongly" else solution.count <= limit


def test_below_the_lightest_levels_the_dual_search_lands_on_the_kink_where_every_level_ties() -> None:
    """Strongly correlated, 2,000 records, a budget 3 tokens below the sum of the lightest levels, 1,500
    kept: the golden-section search on λ only comes near the kink (λ = 1 unit a token) where every
    level ties; the kink, tried beside it, is the exact minimum, so tied.py answers at the bound
    (before: CP-SAT, 6-31 s; 34 ms now)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from generators import generate

    tokens, utility, _ = generate("strongly", 2000, 1)
    budget = int(tokens.min(axis=1).sum()) - 3
    inst = make_instance(tokens, utility, budget, max_records=1500)
    scaled = scale(inst)
    lp = relax(inst, scaled)
    assert lp.multiplier == scaled.scale and core._mostly_tied(lp)  # 1 per token, in scaled units
    found = core._solve_counted(inst, scaled)
    assert found is not None
    solution, red = found
    assert "met at the bound" in solution.detail and solution.scaled_objective == round(red.upper_bound)
    assert solution.tokens_used == budget and solution.count == 1500


def test_at_100000_records_the_bound_is_certified_past_its_float_rounding() -> None:
    """Strongly correlated, 100,000 records, 60,000 kept: the walk meets U = λ·B + μ·M exactly (5·10¹³ in
    scaled units), and U's rounding is bounded by the terms that make it (not 64 ulps of U, 0.72 units,
    past the half unit the certificate allows: CP-SAT then found no allocation in 10 s)."""
    inst = _pisinger("strongly", 100000, 60000)
    scaled = scale(inst)
    lp = relax(inst, scaled)
    choice = tied.tied_counted(inst, scaled, lp)
    assert choice is not None
    assert scaled_value(scaled, choice) == lp.upper_bound  # the bound, met exactly
    assert int((choice >= 0).sum()) == 60000
    assert int(inst.tokens[np.flatnonzero(choice >= 0), choice[choice >= 0]].sum()) == inst.budget


def test_the_first_rows_by_their_bounds_choose_as_the_dense_dp_on_a_larger_instance() -> None:
    """200 records, the last 64 by the exact tail, the first 136 by the count and token bounds: where it
    answers, the tie rule's allocation (the dense DP's, over a table of 200 x 101 x 500 cells)."""
    answered = 0
    for seed in range(6):
        rng = np.random.default_rng(seed)
        tokens = rng.integers(1, 9, size=(200, 3))
        inst = make_instance(tokens, (tokens + 2).astype(float), int(rng.integers(400, 600)), max_records=100)
        scaled, _, got = _tied(inst)
        if got is not None:
            answered += 1
            assert got.tolist() == solve_dp(inst, scaled).choice.tolist(), seed
    assert answered >= 3


@pytest.mark.parametrize("kind, tied_first", [("strongly", True), ("subset-sum", True), ("memory", False),
                                              ("weakly", False)])
def test_tied_goes_first_on_the_degenerate_classes_only(kind, tied_first) -> None:
    inst = _pisinger(kind, 300, 200)
    assert core._mostly_tied(relax(inst, scale(inst))) is tied_first


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_edges_hold_every_total_each_suffix_reaches_by_count(data) -> None:
    """_Edges against enumeration: for every suffix and count, the fewest and most tokens, and (the
    tokens here span less than EDGE_BITS) exactly the totals reached, from either end."""
    n = data.draw(st.integers(0, 6))
    k = data.draw(st.integers(1, 3))
    tokens = np.array(data.draw(st.lists(st.lists(st.integers(0, 9), min_size=k, max_size=k), min_size=n,
                                         max_size=n)), dtype=np.int64).reshape(n, k)
    level_ok = np.array(data.draw(st.lists(st.lists(st.booleans(), min_size=k, max_size=k), min_size=n,
                                           max_size=n)), dtype=bool).reshape(n, k)
    keepable = level_ok.any(axis=1)
    delete_ok = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool) | ~keepable
    big = np.iinfo(np.int64).max // 64
    lightest = np.where(level_ok, tokens, big).min(axis=1)
    heaviest = np.where(level_ok, tokens, -1).max(axis=1)
    counts = data.draw(st.integers(0, n))
    edges = tied._Edges(level_ok, delete_ok, keepable, tokens, lightest, heaviest, counts)
    for start in range(n + 1):
        reached: set[tuple[int, int]] = {(0, 0)}  # (count, tokens) over rows start..
        for row in range(n - 1, start - 1, -1):
            kept = {(c + 1, w + int(tokens[row, o])) for c, w in reached for o in range(k) if level_ok[row, o]}
            reached = kept | (reached if delete_ok[row] else set())
        for count in range(counts + 1):
            totals = {w for c, w in reached if c == count}
            for room in range(-1, 9 * n + 2):
                assert edges.completes(start, count, room) == (room in totals), (start, count, room)
            if totals:
                assert (edges.fewest[start, count], edges.most[start, count]) == (min(totals), max(totals))


def test_edges_are_exact_near_either_end_and_let_every_total_through_between() -> None:
    """Tokens up to 150 (ranges wider than EDGE_BITS): within EDGE_BITS of the fewest or the most the
    test is exact; between them it rejects no total that is reached (it is the range alone there)."""
    checked_between = 0
    for seed in range(60):
        rng = np.random.default_rng(seed)
        n, k = int(rng.integers(1, 7)), int(rng.integers(1, 4))
        tokens = rng.integers(0, 151, size=(n, k))
        level_ok = rng.random((n, k)) < 0.8
        keepable = level_ok.any(axis=1)
        delete_ok = (rng.random(n) < 0.7) | ~keepable
        big = np.iinfo(np.int64).max // 64
        lightest = np.where(level_ok, tokens, big).min(axis=1)
        heaviest = np.where(level_ok, tokens, -1).max(axis=1)
        edges = tied._Edges(level_ok, delete_ok, keepable, tokens, lightest, heaviest, n)
        for start in range(n + 1):
            reached: set[tuple[int, int]] = {(0, 0)}
            for row in range(n - 1, start - 1, -1):
                kept = {(c + 1, w + int(tokens[row, o])) for c, w in reached for o in range(k) if level_ok[row, o]}
                reached = kept | (reached if delete_ok[row] else set())
            for count in range(n + 1):
                totals = {w for c, w in reached if c == count}
                if not totals:
                    continue
                fewest, most = min(totals), max(totals)
                for room in range(fewest - 2, most + 3):
                    near = room - fewest < tied.EDGE_BITS or most - room < tied.EDGE_BITS
                    expected = room in totals if near else True
                    assert edges.completes(start, count, room) == expected, (seed, start, count, room)
                    checked_between += not near and room not in totals
    assert checked_between > 0  # some unreached total between the windows was let through


@pytest.mark.skipif(not native.built(), reason="the compiled kernel is not built")
def test_compiled_edges_are_the_numpy_tables(monkeypatch) -> None:
    """The compiled module's tables equal the numpy loop's, cell for cell (the unreachable sentinels too),
    on random rows: narrow and wide tokens, levels of 0 tokens, rows that must be kept or cannot be."""
    for seed in range(200):
        rng = np.random.default_rng(seed)
        n, k = int(rng.integers(0, 40)), int(rng.integers(1, 6))
        top = int(rng.choice([10, 1000]))
        tokens = rng.integers(0, top, size=(n, k))
        level_ok = rng.random((n, k)) < 0.7
        keepable = level_ok.any(axis=1)
        delete_ok = (rng.random(n) < 0.8) | ~keepable
        big = np.iinfo(np.int64).max // (4 * max(n, 1))
        lightest = np.where(level_ok, tokens, big).min(axis=1)
        heaviest = np.where(level_ok, tokens, -1).max(axis=1)
        counts = int(rng.integers(0, n + 1))
        compiled = tied._Edges(level_ok, delete_ok, keepable, tokens, lightest, heaviest, counts)
        with monkeypatch.context() as patch:
            patch.setenv("MEMSOLVE_KERNEL", "numpy")
            plain = tied._Edges(level_ok, delete_ok, keepable, tokens, lightest, heaviest, counts)
        for table in ("most", "fewest", "below_most", "above_fewest"):
            assert np.array_equal(getattr(compiled, table), getattr(plain, table)), (seed, table)


@pytest.mark.skipif(not native.built(), reason="the compiled kernel is not built")
def test_compiled_range_walk_chooses_as_the_python_walk(monkeypatch) -> None:
    """The compiled module's walk of the head rows (Fenwick trees in C) gives the Python walk's levels,
    count and room, or fails where it fails, on random rows: exact and free counts, budgets and limits
    that complete, ride an end, or cannot be met."""
    outcomes = {"walked": 0, "failed": 0}
    for seed in range(400):
        rng = np.random.default_rng(seed)
        n, k = int(rng.integers(1, 60)), int(rng.integers(1, 6))
        tokens = rng.integers(0, int(rng.choice([5, 100, 1000])), size=(n, k))
        level_ok = rng.random((n, k)) < 0.7
        keepable = level_ok.any(axis=1)
        delete_ok = (rng.random(n) < 0.8) | ~keepable
        big = np.iinfo(np.int64).max // (4 * n)
        lightest = np.where(level_ok, tokens, big).min(axis=1)
        heaviest = np.where(level_ok, tokens, -1).max(axis=1)
        exact = bool(rng.integers(0, 2))
        head = int(rng.integers(0, n + 1))
        limit = int(rng.integers(0, n + 1))
        budget = int(rng.integers(0, int(np.clip(heaviest, 0, None).sum()) + 2))
        compiled = tied._Ranges(delete_ok, keepable, lightest, heaviest, exact).walk(
            tokens, level_ok, delete_ok, head, budget, limit)
        with monkeypatch.context() as patch:
            patch.setenv("MEMSOLVE_KERNEL", "numpy")
            plain = tied._Ranges(delete_ok, keepable, lightest, heaviest, exact).walk(
                tokens, level_ok, delete_ok, head, budget, limit)
        assert (compiled is None) == (plain is None), seed
        if plain is not None:
            assert compiled[0].tolist() == plain[0].tolist() and compiled[1:] == plain[1:], seed
        outcomes["failed" if plain is None else "walked"] += 1
    assert min(outcomes.values()) >= 40


def _near_an_end(seed: int, n: int = 60):
    """Strongly correlated records of 1 to 999 tokens, the budget within 60 tokens of the most (odd
    seeds) or the fewest (even) that the count limit's records can hold: the walk meets the ends."""
    rng = np.random.default_rng(seed)
    tokens = rng.integers(1, 1000, size=(n, 5))
    limit = int(rng.integers(n // 4, n))
    if seed % 2:
        budget = int(np.sort(tokens.max(axis=1))[::-1][:limit].sum()) - int(rng.integers(0, 60))
    else:
        budget = int(np.sort(tokens.min(axis=1))[:limit].sum()) + int(rng.integers(0, 60))
    return make_instance(tokens, (tokens + 10).astype(float), budget, max_records=limit)


def test_the_ends_of_the_ranges_answer_as_the_exact_tail_over_every_row(monkeypatch) -> None:
    """With the head's walk over all but 8 rows, the ends' tables answer wherever the exact tail over
    all 60 rows does, with its allocation; the ranges alone (no tables) answer far less often."""
    answers = {"ranges": 0, "edges": 0, "exact": 0}
    for seed in range(60):
        inst = _near_an_end(seed)
        scaled = scale(inst)
        lp = relax(inst, scaled)
        monkeypatch.setattr(tied, "TAILS", (8,))
        monkeypatch.setattr(tied, "EDGE_CELLS", 0)
        ranges = tied.tied_counted(inst, scaled, lp)
        monkeypatch.undo()
        monkeypatch.setattr(tied, "TAILS", (8,))
        edges = tied.tied_counted(inst, scaled, lp)
        monkeypatch.setattr(tied, "TAILS", (60,))
        monkeypatch.setattr(tied, "MAX_TAIL_BITS", 1 << 31)
        exact = tied.tied_counted(inst, scaled, lp)
        monkeypatch.undo()
        assert (edges is None) == (exact is None), seed
        if exact is not None:
            assert edges.tolist() == exact.tolist(), seed
        if ranges is not None:
            assert ranges.tolist() == exact.tolist(), seed
        answers["ranges"] += ranges is not None
        answers["edges"] += edges is not None
        answers["exact"] += exact is not None
    assert answers["edges"] == answers["exact"] >= 15
    assert answers["ranges"] < answers["edges"] // 2
