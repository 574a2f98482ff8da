"""The kernel's banded LP split (``solve_arrays`` from 16,384 rows, and from 12,288 where the rows' hulls
are dense): a sample of rows sets a band of multipliers around the split; rows whose best option is the
same and unique at both ends of the band get no hull, and the split is taken among the other rows'
increments in the band. Where the band is one efficiency (a block of tied increments around the
capacity: the correlated classes), the tied split confirms it from each row's lightest and heaviest best
options, without hulls. Wherever either is taken it must give what every row's hull gives: the same
multiplier, bound, optimum, allocation, kept levels and core, search and tie-rule counts (only the hull
counts are not taken: -1). The test modes take the band where the kernel would decline it (2) and a band
one sample increment wide (3: the split is often outside it, and the kernel must fall back to every
hull); mode 4 is the tied split alone.

With AVX-512 the band is narrowed by a grid of 8 multipliers between its ends (each row's best option at
all 8 in one pass: _kernel.c, draw_grid), from 4,096 rows; elsewhere the kernel draws no grid. The
grid's twin in plain C (mode 2 of `grid`) runs wherever the CPU lacks AVX-512, so its logic is tested on
every machine, and against the vector pass where there is one."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memsolve.solver import make_instance, native, scale, solve_arrays
from memsolve.solver.kernel import solve_kernel

from .test_kernel_passes import _raw_optimum, _raw_rows

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from generators import generate  # noqa: E402

BAND_ROWS = 16384  # _kernel.c: solve_arrays takes the band from this many rows,
DENSE_BAND_ROWS = 12288  # from this many where a pilot's rows have dense hulls (0.6 k increments a row),
TIED_ROWS = 512  # and the tied split alone (mode 4: after a pilot of 32 rows finds ties) from this many
GRID_ROWS = 4096  # with the grid (AVX-512), the band from this many

# the grid modes this machine runs: none, the C twin, and AVX-512 where the CPU has it (asked at import
# only where the kernel is built: without it every test here fails, as before the grid)
_KERNEL = native.module()
GRID_MODES = [0, 2] + ([1] if _KERNEL is not None and _KERNEL.grid(1) == 1 else [])
if _KERNEL is not None:
    _KERNEL.grid(-1)


@contextmanager
def _grid(mode: int):
    """The band's grid in `mode` (0 none, 1 AVX-512, 2 plain C) inside the block, then the CPU's."""
    kernel = native.module()
    assert kernel.grid(mode) == mode
    try:
        yield
    finally:
        kernel.grid(-1)


def _identical(one, other) -> None:
    """Two solves' info, and where the search did not give up, their allocation, kept levels and core."""
    assert one[0] == other[0]
    if one[0] is not None:  # (else nothing was written)
        assert one[1].tolist() == other[1].tolist() and one[2].tolist() == other[2].tolist()
        free = int(one[0][8])  # (core's first entries: the free rows)
        assert one[3][:free].tolist() == other[3][:free].tolist()


def _solve(tokens, values, usable, capacity, mode=1, at_once=False, banded=0):
    n, k = tokens.shape
    choice, keep, core = np.empty(n, np.int64), np.empty((n, k + 1), np.uint8), np.empty(n, np.int64)
    info = native.module().solve(n, k, tokens, values, usable, capacity, choice, keep, core, mode, at_once, banded)
    return info, choice, keep, core


def _same_answer(full, band, mode) -> bool:
    """Everything but the hull counts; returns whether the band was taken."""
    info, choice, keep, core = full
    b_info, b_choice, b_keep, b_core = band
    assert (info is None) == (b_info is None)
    if info is None:
        return False
    taken = b_info[5] == -1 and b_info[6] == -1
    assert (b_info[5], b_info[6]) == ((-1, -1) if taken else (info[5], info[6]))
    assert b_info[:5] == info[:5] and b_info[7:13] == info[7:13]
    assert info[13] == len(choice) and (b_info[13] <= len(choice) if taken else b_info[13] == len(choice))
    assert b_choice.tolist() == choice.tolist()
    if mode != -1:  # the optimum only: no reduction
        assert b_keep.tolist() == keep.tolist()
        assert b_core[: int(info[8])].tolist() == core[: int(info[8])].tolist()
    return taken


def _scaled(kind: str, n: int, seed: int, budget_share: float, price: float = 0.0):
    tokens, utility, budget = generate(kind, n, seed)
    inst = make_instance(tokens, utility, int(budget * budget_share), price=price)
    scaled = scale(inst)
    return (np.ascontiguousarray(inst.tokens), np.ascontiguousarray(scaled.values),
            np.ascontiguousarray(scaled.usable).view(np.uint8), inst.budget)


@st.composite
def _rows(draw):
    """A few hundred to a few thousand rows: the generator's classes at any share of their budget,
    or raw rows (in fidelity order or not, correlated or not, masks, zero tokens, values to 2**40)."""
    seed = draw(st.integers(0, 2**31))
    rng = np.random.default_rng(seed)
    if draw(st.booleans()):
        kind = draw(st.sampled_from(["memory", "uncorrelated", "weakly", "strongly", "subset-sum"]))
        return _scaled(kind, draw(st.sampled_from([200, 1500, 5000])), seed, draw(st.floats(0.02, 1.6)))
    n = draw(st.sampled_from([3, 60, 700, 3000]))
    k = draw(st.integers(1, 7))
    shape = draw(st.sampled_from(["ordered", "random", "correlated"]))
    tokens = rng.integers(0, draw(st.sampled_from([40, 3000, 2**28])), size=(n, k)).astype(np.int64)
    if shape == "ordered":
        tokens = -np.sort(-tokens, axis=1)
    values = rng.integers(1, draw(st.sampled_from([20, 10**6, 2**40])), size=(n, k)).astype(np.int64)
    if shape == "correlated":
        values = np.maximum(tokens * int(rng.integers(1, 4)) + int(rng.integers(-5, 60)), 1)
    usable = (rng.random((n, k)) < draw(st.floats(0.4, 1.0))).astype(np.uint8)
    capacity = min(int(tokens.sum() * draw(st.floats(0.0, 0.9)) / k), 2**39)
    return np.ascontiguousarray(tokens), np.ascontiguousarray(values), usable, capacity


@settings(max_examples=250, deadline=None)
@given(_rows(), st.sampled_from([1, 0, 2, -1]), st.sampled_from([1, 2, 3, 4]), st.booleans(),
       st.sampled_from(GRID_MODES))
def test_the_band_gives_what_every_hull_gives(rows, mode, banded, at_once, grid) -> None:
    tokens, values, usable, capacity = rows
    full = _solve(tokens, values, usable, capacity, mode, at_once)
    with _grid(grid):
        band = _solve(tokens, values, usable, capacity, mode, at_once, banded)
    _same_answer(full, band, mode)
    if grid == 1:  # the vector passes: exactly what their plain twins give, hull counts included
        with _grid(2):
            _identical(band, _solve(tokens, values, usable, capacity, mode, at_once, banded))


@settings(max_examples=300, deadline=None)
@given(_raw_rows(), st.sampled_from([2, 3, 4]), st.sampled_from(GRID_MODES))
def test_the_band_on_small_rows_is_the_exhaustive_tie_rule(rows, banded, grid) -> None:
    """Rows of values to 2**52 (products past 64 bits: such a row is given its hull), zero tokens,
    masks: the band forced, against the tie rule by exhaustive search."""
    tokens, values, usable, capacity = rows
    with _grid(grid):
        answer = _solve(tokens, values, usable, capacity, banded=banded)
    if grid == 1:
        with _grid(2):
            _identical(answer, _solve(tokens, values, usable, capacity, banded=banded))
    info, choice, _, _ = answer
    expected, value, used = _raw_optimum(tokens, values, usable, capacity)
    assert info is not None
    assert (int(info[3]), int(info[4])) == (value, used)
    assert choice.tolist() == expected


@pytest.mark.parametrize("kind", ["memory", "uncorrelated", "weakly"])
@pytest.mark.parametrize("share", [0.1, 0.6, 1.0])
@pytest.mark.parametrize("grid", GRID_MODES)
def test_the_band_is_taken_where_few_rows_are_in_it(kind, share, grid) -> None:
    """Not vacuous: on these classes the band is taken (the hull counts are not) and spares most rows
    their hull, with the answer of every hull, the search's tighter bounds (which need every hull)
    included. (Uncorrelated at the full budget, whose bests about fill it, the band reaches down to
    lambda = 0: no row outside it is asked for an increment after its floor.)"""
    rows = _scaled(kind, 20_000, 3, share)
    for at_once in (False, True):
        full = _solve(*rows, at_once=at_once)
        with _grid(grid):
            band = _solve(*rows, at_once=at_once, banded=1)
        assert _same_answer(full, band, 1)
        # the search's exact LP of the rows outside it needs every hull: built once it has generated
        # 65,536 states (at once: from the first), as on weakly correlated rows at these budgets
        large = at_once or band[0][10] > 65_536
        assert band[0][13] == 20_000 if large else band[0][13] < 20_000 // 2
        assert large == (at_once or kind == "weakly" and share < 1)


@pytest.mark.parametrize("kind", ["memory", "uncorrelated"])
@pytest.mark.parametrize("grid", GRID_MODES)
def test_the_band_with_a_price_per_token(kind, grid) -> None:
    """A price per token (MemPrice) leaves levels worth less than nothing: not usable, their scaled
    values negative. They neither keep a row in the band nor change its answer."""
    rows = _scaled(kind, 20_000, 5, 0.2, price=0.05 if kind == "memory" else 0.3)
    assert (rows[1] < 0).any() and not rows[2].all()  # not vacuous
    with _grid(grid):
        band = _solve(*rows, banded=1)
    assert _same_answer(_solve(*rows), band, 1)
    assert band[0][13] < 20_000 // 4  # most rows get no hull


@pytest.mark.parametrize("kind", ["strongly", "subset-sum"])
@pytest.mark.parametrize("share", [0.8, 1.0])
def test_the_tied_split_is_taken_on_the_correlated_classes(kind, share) -> None:
    """Every level of these classes ties at the multiplier: the sample finds one efficiency around the
    capacity, and the rows' lightest and heaviest options best at it confirm it without a hull."""
    rows = _scaled(kind, 20_000, 3, share)
    for at_once in (False, True):
        band = _solve(*rows, at_once=at_once, banded=1)
        assert _same_answer(_solve(*rows, at_once=at_once), band, 1)
        # only the rows the rankings around the floor take (129 each) get a hull
        assert band[0][13] == 20_000 if at_once else band[0][13] <= 2 * 129


@pytest.mark.parametrize("kind", ["strongly", "subset-sum", "memory"])
def test_the_tied_split_alone_on_fewer_rows(kind) -> None:
    """Mode 4 (solve_arrays from 512 rows): taken on the correlated classes, declined after its pilot
    where no block of ties shows."""
    for n in (600, 5_000):
        rows = _scaled(kind, n, 3, 1.0)
        assert _same_answer(_solve(*rows), _solve(*rows, banded=4), 1) == (kind != "memory")


@pytest.mark.parametrize("kind", ["memory", "uncorrelated", "weakly", "strongly"])
@pytest.mark.parametrize("grid", GRID_MODES)
def test_below_16384_rows_the_band_only_where_hulls_are_dense(kind, grid) -> None:
    """Mode 1 from 12,288 rows (solve_arrays' default there): without the grid, memory-shaped rows (3.6
    hull increments of 4 levels) take the band, the uncorrelated (1.7 of 5) and weakly correlated (2.4 of
    5) every hull; with it, every class takes the band (the grid narrows it), and most rows get no hull.
    The correlated classes take the tied split, as from 512 rows."""
    rows = _scaled(kind, 13_000, 3, 1.0)
    full = _solve(*rows)
    with _grid(grid):
        for banded in (1, -1):  # -1: the kernel's default for the row count, as solve_arrays runs it
            band = _solve(*rows, banded=banded)
            taken = _same_answer(full, band, 1)
            assert taken == (grid != 0 or kind in ("memory", "strongly"))
            if kind == "memory" or grid != 0 and kind != "strongly":
                assert band[0][13] < 13_000 // (2 if grid == 0 else 4)


@pytest.mark.parametrize("kind", ["memory", "uncorrelated", "weakly"])
def test_with_the_grid_the_band_from_4096_rows(kind) -> None:
    """solve_arrays' default (-1) takes the band from GRID_ROWS rows where the grid is drawn, and not
    below; without the grid, below 12,288 rows only where hulls are dense (memory-shaped)."""
    for n in (GRID_ROWS - 1, GRID_ROWS):
        rows = _scaled(kind, n, 3, 1.0)
        full = _solve(*rows)
        for grid in GRID_MODES:
            with _grid(grid):
                taken = _same_answer(full, _solve(*rows, banded=-1), 1)
            assert taken == (grid != 0 and n >= GRID_ROWS)


def test_the_vector_grid_is_the_plain_one() -> None:
    """Where the CPU has AVX-512 the grid's pass runs 8 multipliers a vector, and the tied split a row's
    levels a vector: the same rows in the band (the hull counts), the same everything else, as the plain
    twins; elsewhere the kernel says it has no vector grid (and draws none by default)."""
    kernel = native.module()
    if 1 not in GRID_MODES:
        assert kernel.grid(1) == 0 and kernel.grid(-1) == 0
        return
    for kind in ("memory", "uncorrelated", "weakly", "strongly", "subset-sum"):
        for share in (0.05, 0.5, 1.0):
            rows = _scaled(kind, 20_000, 7, share)
            with _grid(1):
                vector = _solve(*rows, banded=1)
            with _grid(2):
                plain = _solve(*rows, banded=1)
            _identical(vector, plain)


def _tied_reference(tokens, values, usable, p, q):
    """Each row's tied-split numbers as tied_row64 defines them, in Python integers: the best reduced
    value (delete: 0 tokens, 0 value, option k), the best of the other options (the best itself where two
    tie), the options as good (bit o), the lightest of them and the heaviest (the first option of equal
    tokens; a usable level of no tokens comes before delete), and how many options the row has."""
    rows = []
    for tw, tv, ok in zip(tokens.tolist(), values.tolist(), usable.tolist(), strict=True):
        k = len(tw)
        options = [(o, tw[o], q * tv[o] - p * tw[o]) for o in range(k) if ok[o]] + [(k, 0, 0)]
        best = max(r for _, _, r in options)
        tied = [(o, w) for o, w, r in options if r == best]
        others = [r for _, _, r in options if r != best]
        second = best if len(tied) >= 2 else max(others) if others else 0
        light = min(tied, key=lambda ow: (ow[1], ow[0]))[0]
        heavy = max(tied, key=lambda ow: (ow[1], -ow[0]))[0]
        rows.append([best, second, sum(1 << o for o, _ in tied), light, heavy, len(options)])
    return rows


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**31), st.integers(1, 7), st.sampled_from([40, 3000, 2**40, 2**57]), st.booleans())
def test_the_tied_rows_in_vectors_are_the_plain_ones(seed, k, top, on_a_line) -> None:
    """The tied split's numbers a row, from registers (where the CPU has AVX-512) and from tied_row64,
    against a plain Python statement of them: rows on a line (every level tied) and off it, masks, levels
    of no tokens, tokens up to 2**57 (the vector keys' limit is 2**58)."""
    rng = np.random.default_rng(seed)
    n = 300
    tokens = rng.integers(0, top, size=(n, k)).astype(np.int64)
    small = top <= 3000  # (lambda's numbers as wide as the row's products allow)
    p, q = (int(rng.integers(1, 2**20)), int(rng.integers(1, 2**20))) if small else (int(rng.integers(1, 4)), 1)
    if top == 2**57:
        p = 1  # (values below 2**58 too: the row's numbers must fit the keys)
    values = tokens * p // q if on_a_line else rng.integers(0, max(top * p // q, 2), size=(n, k))
    near = rng.random((n, k)) < 0.2  # a few levels just off the line
    values = np.ascontiguousarray(np.maximum(np.where(near, values + rng.integers(-3, 4, size=(n, k)), values), 0))
    usable = (rng.random((n, k)) < 0.8).astype(np.uint8)
    expected = _tied_reference(tokens, values, usable, p, q)
    kernel = native.module()
    for vector in [False] + ([True] if 1 in GRID_MODES else []):
        out = np.empty((n, 6), np.int64)
        kernel.tied_rows(n, k, tokens, values.astype(np.int64), usable, p, q, vector, out)
        assert out.tolist() == expected


def _cpu_has_avx512() -> bool | None:
    """Whether the operating system lists the CPU flags the vector passes need (None where it lists none)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None
    flags = [set(line.split()) for line in text.splitlines() if line.startswith("flags")]
    return all({"avx512f", "avx512dq", "avx512vl", "avx512bw"} <= f for f in flags) if flags else None


def test_the_vector_passes_run_where_the_cpu_has_avx512() -> None:
    """The kernel draws the grid (and takes the tied split's rows in registers) exactly where the CPU has
    AVX-512 F, DQ, VL and BW: on such a machine every test above also compares the vector passes with
    their plain twins; on another, the twins alone run, and this says why."""
    said = _cpu_has_avx512()
    if said is None:
        pytest.skip("the operating system does not list the CPU's flags")
    assert (1 in GRID_MODES) is said
    assert native.module().grid(-1) == (1 if said else 0)


def test_the_tied_split_with_tokens_past_2_to_the_58() -> None:
    """The vector tied split orders a row's options by tokens * 64 + option: tokens of 2**58 and more would
    wrap, so such rows go the plain way (review of session 13: the keys wrapped, the lightest and heaviest
    best options came out swapped and the tie rule lost the optimum)."""
    tokens = np.array([[2**58, 2**58 + 2**57, 5]] + [[3, 2, 1]] * 7, dtype=np.int64)
    values = tokens.copy()
    usable = np.ones(tokens.shape, np.uint8)
    for extra in (0, 7, 18):
        capacity = 2**58 + 2**57 + extra
        full = _solve(tokens, values, usable, capacity)
        assert full[0] is not None
        for grid in GRID_MODES:
            with _grid(grid):
                tied = _solve(tokens, values, usable, capacity, banded=4)
            assert _same_answer(full, tied, 1)  # taken: every level lies on the line of slope 1


def test_the_band_is_declined_where_every_level_fits() -> None:
    """lambda = 0: every row offers the increment into its floor to a ranking that never fills with
    less efficient ones, so the band would spare no hull."""
    rows = _scaled("uncorrelated", 20_000, 3, 2.0)
    assert not _same_answer(_solve(*rows), _solve(*rows, banded=1), 1)


@pytest.mark.parametrize("n", [TIED_ROWS - 1, TIED_ROWS, DENSE_BAND_ROWS - 1, DENSE_BAND_ROWS, BAND_ROWS - 1,
                               BAND_ROWS, 3 * BAND_ROWS])
@pytest.mark.parametrize("kind", ["memory", "uncorrelated", "weakly", "strongly"])
def test_solve_arrays_with_the_band_answers_as_every_hull(kind, n) -> None:
    tokens, utility, budget = generate(kind, n, 11)
    inst = make_instance(tokens, utility, budget)
    found = solve_arrays(tokens, utility, budget)
    kernel = solve_kernel(inst, scale(inst), bounded_ties=False)
    assert found.status == "optimal" and found.bound == found.objective
    assert found.choice.tolist() == kernel.choice.tolist()


@st.composite
def _tied_rows(draw):
    """Rows whose levels lie on lines of one slope (every level ties at it, as in Pisinger's correlated
    classes), some rows off the line, masks, levels of no tokens, 1 to 7 levels, values past 2**31
    (products past 64 bits at the split: such rows go the 128-bit way)."""
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    n, k = draw(st.sampled_from([600, 1500])), draw(st.integers(1, 7))
    slope, lift = draw(st.integers(1, 5)), draw(st.sampled_from([0, 0, 7, 100]))
    tokens = rng.integers(0 if draw(st.booleans()) else 1, draw(st.sampled_from([50, 1000, 2**33])), size=(n, k))
    values = tokens * slope + lift
    off = rng.random((n, k)) < draw(st.sampled_from([0.0, 0.05, 0.3]))
    values[off] = np.maximum(values[off] - rng.integers(1, 40, size=int(off.sum())), 1)
    usable = (rng.random((n, k)) < draw(st.sampled_from([1.0, 0.8]))).astype(np.uint8)
    light = int(np.where(usable == 1, tokens, 0).min(axis=1).sum())
    heavy = int(np.where(usable == 1, tokens, 0).max(axis=1).sum())
    capacity = min(light + int((heavy - light) * draw(st.floats(0.05, 0.95))), 2**39)
    tokens, values = np.ascontiguousarray(tokens.astype(np.int64)), np.ascontiguousarray(values.astype(np.int64))
    return tokens, values, usable, capacity


@settings(max_examples=40, deadline=None)
@given(_tied_rows())
def test_the_tied_split_in_vectors_is_the_plain_one(rows) -> None:
    """The tied split (mode 4) gives what every hull gives with each grid mode, and with AVX-512 exactly
    what its plain twin gives (hull counts included)."""
    full = _solve(*rows)
    answers = []
    for grid in GRID_MODES:
        with _grid(grid):
            answers.append(_solve(*rows, banded=4))
        _same_answer(full, answers[-1], 1)
    for other in answers[1:]:
        _identical(other, answers[0])


@pytest.mark.parametrize("seed", range(6))
def test_the_tied_split_past_64_bits(seed) -> None:
    """Rows on one line of slope a / b in lowest terms, b near 2**31 (lambda's denominator), values
    past 2**32: q v leaves 64 bits, so each row is taken in 128 bits, with the answer of every hull
    (levels of equal tokens and value included: the first of them is the one the hull keeps)."""
    rng = np.random.default_rng(seed)
    n, k, a, b = 50, 5, 2**32 + 15, 2**31 - 1
    steps = rng.integers(1, 9, size=(n, k)).astype(np.int64)
    tokens, values = steps * b, steps * a + 2**33
    usable = (rng.random((n, k)) < 0.9).astype(np.uint8)
    lightest = int(np.where(usable, tokens, 2**62).min(axis=1).sum())
    heaviest = int(np.where(usable, tokens, 0).max(axis=1).sum())
    capacity = lightest + int((heaviest - lightest) * rng.uniform(0.3, 0.7))  # inside the block of ties
    full = _solve(tokens, values, usable, capacity)
    assert full[0] is not None and (full[0][0], full[0][1]) == (a, b)  # lambda: the line's slope
    for banded in (2, 4):
        assert _same_answer(full, _solve(tokens, values, usable, capacity, banded=banded), 1)


@pytest.mark.parametrize("banded", [0, 2])
def test_the_reported_optimum_is_exact_past_2_to_the_53(banded) -> None:
    """The kernel reports V* as an integer (it went through a double, and 2**53 + 1 came back as
    2**53): two levels worth just under 2**52 each (hypothesis found it on raw rows)."""
    tokens = np.array([[4, 3, 2, 1]] * 5 + [[0, 1, 2, 3]], dtype=np.int64)
    values = np.array([[2**52 - 17, 3, 2, 1], [21, 20, 19, 1], [4, 3, 2, 1], [4, 3, 2, 1], [4, 3, 2, 1],
                       [1, 2, 3, 2**52 - 1]], dtype=np.int64)
    usable = np.zeros((6, 4), np.uint8)
    usable[0, 0] = usable[1, 2] = usable[5, 3] = 1
    info, choice, _, _ = _solve(tokens, values, usable, 9, banded=banded)
    expected, value, used = _raw_optimum(tokens, values, usable, 9)
    assert value == 2**53 + 1
    assert (info[3], info[4]) == (value, used)
    assert choice.tolist() == expected


@pytest.mark.parametrize("banded", [1, 4, -1])
def test_a_usable_level_of_nothing_goes_before_delete(banded) -> None:
    """A usable level of 0 tokens and 0 value (raw arrays allow it; scaling never makes one) is the
    same point as delete and comes first, as on the hull (delete is the last option): a tied row
    whose best is that point is floored at the level, a vertex of its hull (review 10: the tied split
    floored it at delete, which the search's LP then looked for past the row's hull)."""
    rng = np.random.default_rng(5)
    n, k = 5000, 5
    tokens = rng.integers(1, 1000, size=(n, k)).astype(np.int64)
    values = tokens.copy()
    low = rng.random(n) < 0.2
    values[low] = np.maximum(tokens[low] // 2, 1)
    tokens[low, 4] = values[low, 4] = 0
    usable = np.ones((n, k), np.uint8)
    capacity = int(tokens.max(axis=1).sum() * 0.5)
    for mode, at_once in ((1, True), (1, False), (-1, False)):
        full = _solve(tokens, values, usable, capacity, mode, at_once)
        assert _same_answer(full, _solve(tokens, values, usable, capacity, mode, at_once, banded), mode)


@pytest.mark.parametrize("banded", [-1, 0, 1, 2, 3, 4])
def test_no_rows(banded) -> None:
    info, choice, _, _ = _solve(np.zeros((0, 3), np.int64), np.zeros((0, 3), np.int64), np.zeros((0, 3), np.uint8),
                                10, banded=banded)
    assert info is not None and (info[3], info[4]) == (0, 0) and choice.size == 0
