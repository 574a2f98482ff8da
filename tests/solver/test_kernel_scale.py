"""The kernel's scaling four levels at a time (AVX2): the same values, usable mask, row bests and
refusals as the scalar loop and as numpy's instance.scale, at every lane a level can sit in."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memsolve.errors import InputError
from memsolve.records import MAX_UTILITY
from memsolve.solver import make_instance, native, scale, solve_arrays

from .helpers import generated

KERNEL = native.module()
pytestmark = pytest.mark.skipif(KERNEL is None, reason="the compiled kernel is not built")


def _cpu_has_avx2() -> bool | None:
    """What the operating system says of this CPU (None where it does not say)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None
    flags = [line for line in text.splitlines() if line.startswith("flags")]
    return any("avx2" in line.split() for line in flags) if flags else None


def test_the_vector_pass_is_taken_where_the_cpu_has_avx2() -> None:
    said = _cpu_has_avx2()
    if said is None:
        pytest.skip("the operating system does not list the CPU's flags")
    assert KERNEL.vector_scaling(True) is said
    assert KERNEL.vector_scaling(False) is False
    assert KERNEL.vector_scaling(True) is said


@pytest.fixture
def vectors():
    """Switches the vector pass on or off for one call; leaves it on."""
    if not KERNEL.vector_scaling(True):
        pytest.skip("this CPU has no AVX2 (the scalar loop is every other test's)")

    def switch(on: bool) -> None:
        assert KERNEL.vector_scaling(on) is on
    yield switch
    KERNEL.vector_scaling(True)


def _one_call(tokens, utility, budget, price, mask):
    n, k = tokens.shape
    choice = np.empty(n, np.int64)
    found = KERNEL.solve_arrays(n, k, tokens, utility, None if mask is None else mask.view(np.uint8), budget, price,
                                -1, True, MAX_UTILITY, choice)
    return found, (choice.tolist() if found is not None else None)


def _job(tokens, utility, budget, price, mask, errors=False):
    """solve_job's scaled arrays and answer (it takes checked inputs, as the engine gives it); with
    ``errors``, the message of the kernel's RuntimeError in place of the answer (and no choice)."""
    n, k = tokens.shape
    values, usable = np.full((n, k), 7, np.int64), np.full((n, k), 7, np.uint8)
    choice, keep, core = np.empty(n, np.int64), np.empty((n, k + 1), np.uint8), np.empty(n, np.int64)
    try:
        out = KERNEL.solve_job(n, k, tokens, utility, mask.view(np.uint8), budget, price, 1, values, usable, choice,
                               keep, core)
    except RuntimeError as exc:
        if not errors:
            raise
        return str(exc), values, usable, None
    return out, values, usable, choice


def _random_arrays(rng, n, k, wild):
    tokens = rng.integers(0, 2000, (n, k)).astype(np.int64)
    # magnitudes up to 1e15: values of 2**51 and more (redone one by one), and sums past 2**52 (a
    # smaller factor, redone by the second pass)
    utility = rng.random((n, k)) * 10.0 ** rng.uniform(-3, 15, (n, 1))
    if wild:  # what the checks refuse where offered, and what must be read as +0 or left alone
        draw = rng.random((n, k))
        utility[draw < 0.02] = np.nan
        utility[(draw >= 0.02) & (draw < 0.04)] *= -1
        tokens[(draw >= 0.04) & (draw < 0.06)] *= -1
        tokens[(draw >= 0.06) & (draw < 0.08)] = 2**61
        utility[(draw >= 0.08) & (draw < 0.10)] = -0.0
        utility[(draw >= 0.10) & (draw < 0.12)] = 2e15
    return tokens, utility


@pytest.mark.parametrize("seed", range(6))
def test_the_vector_pass_equals_the_scalar_loop(seed, vectors) -> None:
    rng = np.random.default_rng(seed)
    answered = declined = 0
    for _ in range(300):
        n, k = int(rng.integers(0, 30)), int(rng.integers(1, 10))
        tokens, utility = _random_arrays(rng, n, k, wild=rng.random() < 0.3)
        mask = rng.random((n, k)) < 0.8 if rng.random() < 0.5 else None
        budget = int(rng.integers(0, 5000)) if rng.random() < 0.5 else int(rng.integers(0, 2**39))
        price = 0.0 if rng.random() < 0.4 else float(rng.random() * 10.0 ** rng.uniform(-4, 4))
        vectors(True)
        fast = _one_call(tokens, utility, budget, price, mask)
        vectors(False)
        slow = _one_call(tokens, utility, budget, price, mask)
        assert fast == slow
        answered += fast[0] is not None
        declined += fast[0] is None
        offered = np.ones((n, k), bool) if mask is None else mask
        checked = offered & (tokens >= 0) & (utility >= 0) & (utility <= MAX_UTILITY)  # NaN is not
        clean = np.where(checked, utility, 0.0)
        vectors(True)
        fast_job = _job(tokens, clean, budget, price, checked)
        vectors(False)
        slow_job = _job(tokens, clean, budget, price, checked)
        assert fast_job[0] == slow_job[0]
        for a, b in zip(fast_job[1:], slow_job[1:], strict=True):
            assert np.array_equal(a, b)
    assert answered > 150 and declined > 50  # both kinds of answer were compared


@pytest.mark.parametrize("kind", ["memory", "uncorrelated", "strong", "subset", "ties"])
@pytest.mark.parametrize("price", [0.0, 0.003])
def test_the_vector_pass_scales_as_numpy(kind, price, vectors, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every class widened to 7 or 8 levels (the vector pass and its scalar tail), a random mask,
    utilities over 11 orders of magnitude (a factor below 10**6: the second pass after it), against
    numpy's own scaling (instance.scale without the kernel)."""
    base = generated(kind, 700, 4)
    rng = np.random.default_rng(len(kind))
    tokens = np.hstack([base.tokens, base.tokens // 2 + 1, base.tokens[:, :1] + 3])
    utility = np.hstack([base.utility, base.utility * 0.6, base.utility[:, :1] * 1.1])
    utility *= 10.0 ** np.linspace(-2, 9, base.n)[:, None]
    mask = rng.random(tokens.shape) < 0.85
    inst = make_instance(tokens, utility, base.budget, price=price, mask=mask)
    assert inst.k >= 7
    vectors(True)
    out, values, usable, _ = _job(np.ascontiguousarray(inst.tokens), np.ascontiguousarray(inst.utility),
                                  int(inst.budget), price, np.ascontiguousarray(inst.mask))
    monkeypatch.setenv("MEMSOLVE_KERNEL", "numpy")
    expected = scale(inst)
    assert out[0] == expected.scale and expected.scale < 1e6  # the second pass ran after the vector one
    assert np.array_equal(values, expected.values)
    assert np.array_equal(usable.view(bool), expected.usable)


@pytest.mark.parametrize("lane", range(6))
@pytest.mark.parametrize("wrong", [np.nan, -1.0, 2 * MAX_UTILITY, "tokens"])
def test_a_refused_level_is_refused_in_every_lane(lane, wrong, vectors) -> None:
    """k = 6: lanes 0-3 in the vector, 4-5 after it. Offered, the level is refused (the Python path
    words the error); withheld, it is not read."""
    rng = np.random.default_rng(lane)
    tokens = rng.integers(1, 50, (9, 6)).astype(np.int64)
    utility = rng.random((9, 6))
    if wrong == "tokens":
        tokens[4, lane] = -3
    else:
        utility[4, lane] = wrong
    mask = np.ones((9, 6), bool)
    for on in (True, False):
        vectors(on)
        assert _one_call(tokens, utility, 100, 0.0, None)[0] is None
        mask[4, lane] = False
        assert _one_call(tokens, utility, 100, 0.0, mask)[0] is not None
        mask[4, lane] = True
    with pytest.raises(InputError, match="utilities must be finite|tokens"):
        solve_arrays(tokens, utility, 100)


@pytest.mark.parametrize("big", [2.2e9, 2.26e9, 3.0e9, 4.4e9])
@pytest.mark.parametrize("price", [0.0, 0.5])
def test_values_past_two_to_the_51_round_as_numpy(big, price, vectors, monkeypatch: pytest.MonkeyPatch) -> None:
    """Values of 2**51 or more (utilities past 2.2518e9 at the usual factor of 10**6, the factor
    kept: the row bests sum below 2**52 / 10**6): the lanes redone one by one, in each of the
    vector's four lanes and in the tail; 2.2e9 stays below (no lane redone)."""
    rng = np.random.default_rng(7)
    tokens = rng.integers(1, 50, (40, 5)).astype(np.int64)
    utility = rng.random((40, 5)) * 1e-3
    utility[3] = big * (1.0 - np.array([0, 3, 1, 4, 2]) * 1e-4) + rng.random(5)  # fractions: rounding
    inst = make_instance(tokens, utility, 60, price=price)
    monkeypatch.setenv("MEMSOLVE_KERNEL", "numpy")
    expected = scale(inst)
    monkeypatch.delenv("MEMSOLVE_KERNEL")
    assert expected.scale == 1e6  # the usual factor: the first pass's values stand
    assert (np.abs(expected.values[3]) >= 2**51).all() == (big > 2.2518e9)
    answers = []
    for on in (True, False):
        vectors(on)
        out, values, usable, choice = _job(tokens, utility, 60, price, np.ones((40, 5), bool))
        assert np.array_equal(values, expected.values) and np.array_equal(usable.view(bool), expected.usable)
        answers.append((out, choice.tolist(), _one_call(tokens, utility, 60, price, None)))
    assert answers[0] == answers[1]


@pytest.mark.parametrize("lane", range(5))
@pytest.mark.parametrize("negative", [-1, -(2**52), -(2**62)])
def test_negative_tokens_unchecked_as_the_scalar_loop(lane, negative, vectors) -> None:
    """solve_job takes inputs make_instance checked; an Instance built around it may still offer
    negative tokens: both passes read them the same (the vector's conversion holds from 0 only)."""
    tokens = np.array([[5, 3, 4, 2, 6]] * 3, np.int64)
    utility = np.array([[1.0, 2.0, 3.0, 4.0, 5.0]] * 3)
    tokens[1, lane] = negative
    answers = []
    for on in (True, False):
        vectors(on)
        # negative tokens may break the search's invariants: then the same error either way
        out, values, usable, choice = _job(tokens, utility, 9, 1.0, np.ones(tokens.shape, bool), errors=True)
        answers.append((out, values.tolist(), usable.tolist(), None if choice is None else choice.tolist()))
    assert answers[0] == answers[1]


@pytest.mark.parametrize("k", [3, 4, 5])
@pytest.mark.parametrize("on", [True, False])
def test_the_width_of_the_scaled_numbers_reaches_the_kernel(k, on, vectors) -> None:
    """The scaling hands the kernel the OR of every usable level's tokens and values: where it is narrow
    every row's products fit 64 bits at once, else rows are asked one by one. Rows on one line of slope
    a / b (b near 2**24, tokens below 2**27), values past 2**39: q v leaves 64 bits, so the tied split
    (2,100 rows) must take them in 128 bits; a width that missed their values (the vector lanes, k = 4;
    the scalar loop, k = 3) would wrap its products and leave the tied split for every hull."""
    vectors(on)
    rng = np.random.default_rng(k)
    n, a, b = 2100, 1031, 2**24 - 3
    steps = rng.integers(1, 9, size=(n, k)).astype(np.int64)
    tokens = steps * b
    values = steps * a + 2**39 + rng.integers(0, 2**39, size=(n, 1))
    utility = values / 1e6  # scales back to exactly these values
    lightest, heaviest = int(tokens.min(axis=1).sum()), int(tokens.max(axis=1).sum())
    budget = lightest + (heaviest - lightest) // 2  # inside the block of ties
    out, scaled, usable, choice = _job(tokens, utility, budget, 0.0, np.ones((n, k), bool))
    assert np.array_equal(scaled, values) and usable.all()
    info = out[1]
    assert (info[0], info[1]) == (a, b) and (info[5], info[6]) == (-1, -1)  # the tied split was taken
    every_hull = np.empty(n, np.int64), np.empty((n, k + 1), np.uint8), np.empty(n, np.int64)
    expected = KERNEL.solve(n, k, tokens, values, usable, budget, *every_hull, 1, False, 0)
    assert expected[5] > 0 and expected[:5] == info[:5] and expected[7:13] == info[7:13]
    assert choice.tolist() == every_hull[0].tolist()
    assert _one_call(tokens, utility, budget, 0.0, None)[1] == choice.tolist()


@pytest.mark.parametrize("share", [0.5, 0.999, 1.001, 3.0])
@pytest.mark.parametrize("on", [True, False])
def test_the_factor_where_the_positive_sum_and_the_bests_disagree(share, on, vectors, monkeypatch) -> None:
    """The vector pass sums every positive net value instead of each row's best: where that sum leaves
    the usual factor in doubt (here five times the bests' sum, as every level is worth as much), the
    rows' bests decide, as numpy's sum of them does: the usual factor where they take `share` of 2**52
    below 1, a smaller one past it."""
    vectors(on)
    n, k = 1000, 5
    each = share * 2.0**52 / 1e6 / n  # every level's utility: the bests sum to share * 2**52 / 10**6
    tokens = np.tile(np.arange(k, 0, -1, dtype=np.int64), (n, 1))
    utility = np.full((n, k), each) * (1.0 + np.linspace(0.0, 1e-9, n))[:, None]
    inst = make_instance(tokens, utility, 3 * n)
    out, values, usable, choice = _job(tokens, utility, 3 * n, 0.0, np.ones((n, k), bool))
    monkeypatch.setenv("MEMSOLVE_KERNEL", "numpy")
    expected = scale(inst)
    assert (expected.scale == 1e6) == (share < 1.0)
    assert out[0] == expected.scale
    assert np.array_equal(values, expected.values) and np.array_equal(usable.view(bool), expected.usable)


@pytest.mark.parametrize("on", [True, False])
def test_the_second_pass_hands_the_kernel_its_own_width(on, vectors) -> None:
    """A level worth 4e12 or more passes 4e18 at the usual factor: the first pass leaves it unusable (0),
    the sum of the bests calls for a factor near 1,100, and the second pass makes it usable at about 2**52.
    Its width must be the second pass's: with the first pass's, the kernel would take that record's
    products with lambda in 64 bits, and they wrap (12 of these 30 instances then answered otherwise).
    The one call must answer as the kernel does on numpy's scaling, which it is not told the width of."""
    vectors(on)
    for seed in range(30):
        rng = np.random.default_rng(seed)
        n, k = 300, 4
        tokens = rng.integers(1, 5000, size=(n, k)).astype(np.int64)
        utility = rng.random((n, k)) * 1000
        utility[0, 0] = 4e12 * (1 + rng.random())
        budget = int(tokens.min(axis=1).sum() * 2)
        expected = scale(make_instance(tokens, utility, budget))
        assert expected.scale < 1e6 and expected.values[0, 0] > 2**51
        found, choice = _one_call(tokens, utility, budget, 0.0, None)
        every = np.empty(n, np.int64), np.empty((n, k + 1), np.uint8), np.empty(n, np.int64)
        info = KERNEL.solve(n, k, tokens, np.ascontiguousarray(expected.values),
                            np.ascontiguousarray(expected.usable).view(np.uint8), budget, *every, 1)
        assert found is not None and info is not None
        assert choice == every[0].tolist(), seed
