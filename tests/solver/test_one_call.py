"""solve_arrays in one call of the compiled kernel: the same allocation, objective (to the bit),
tokens and bound as the engine's path and the numpy path; the Python path wherever the one call
declines, with the same errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import memsolve.solver as solver
from memsolve.errors import InputError
from memsolve.solver import engines, native, run, solve_arrays

from .helpers import generated, instances

pytestmark = pytest.mark.skipif(not native.built(), reason="the one-call path needs the compiled kernel")


def _arrays(inst):
    """The instance's arrays as a caller passes them (the mask only where a level is withheld)."""
    mask = None if inst.mask.all() else inst.mask.copy()
    tokens = np.ascontiguousarray(inst.tokens, dtype=np.int64)
    utility = np.where(inst.mask, inst.utility, 0.0)
    return tokens, utility, inst.budget, {"price": inst.price, "mask": mask, "max_records": inst.max_records}


def _by_engine(inst):
    """The answer of the engine's path (make_instance, Job, kernel or numpy, make_solution)."""
    return run(inst, "dp", "none", compare_greedy=False).solution


def _same(fast, slow) -> None:
    assert fast.choice.tolist() == slow.choice.tolist()
    assert fast.objective == slow.objective  # the same float: numpy's summation, in C
    assert fast.tokens_used == slow.tokens_used
    assert fast.status == slow.status == "optimal"
    assert fast.bound == fast.objective


@settings(max_examples=400, deadline=None)
@given(st.one_of(instances(max_n=8, max_k=4, integral=True), instances(max_n=8, max_k=3)))
def test_one_call_equals_the_engines_path(inst) -> None:
    tokens, utility, budget, limits = _arrays(inst)
    one = solver._solve_in_one_call(tokens, utility, budget, **limits)
    slow = _by_engine(inst)
    if one is None:  # declined: only a binding count limit (or the dense DP's tie order) sends it back
        assert inst.max_records is not None and slow.count == inst.max_records
    else:
        _same(one, slow)
    _same(solve_arrays(tokens, utility, budget, **limits), slow)


@pytest.mark.parametrize("kind", ["memory", "uncorrelated", "strong", "subset", "ties"])
@pytest.mark.parametrize("n", [0, 1, 150, 1200])
def test_one_call_answers_every_class_and_the_numpy_path_agrees(kind, n, monkeypatch: pytest.MonkeyPatch) -> None:
    inst = generated(kind, n, 5)
    tokens, utility, budget, limits = _arrays(inst)
    one = solver._solve_in_one_call(tokens, utility, budget, **limits)
    assert one is not None  # not vacuous: the one call answers these
    _same(one, _by_engine(inst))
    monkeypatch.setenv("MEMSOLVE_KERNEL", "numpy")
    assert solver._solve_in_one_call(tokens, utility, budget, **limits) is None
    _same(one, solve_arrays(tokens, utility, budget, **limits))


def test_a_large_allocation_sums_as_numpy_does() -> None:
    """Over 8,192 kept rows (numpy's buffer size) the objective is still numpy's float."""
    rng = np.random.default_rng(3)
    tokens = rng.integers(1, 50, size=(30_000, 2))
    utility = rng.random((30_000, 2)) * 10.0 ** rng.uniform(-3, 3, (30_000, 1))
    budget = int(tokens.max(axis=1).sum())
    inst = solver.make_instance(tokens, utility, budget, price=0.001)
    one = solver._solve_in_one_call(tokens, utility, budget, price=0.001)
    assert one is not None and int((one.choice >= 0).sum()) > 8192
    _same(one, _by_engine(inst))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0, 1e12, allow_nan=False), max_size=600))
def test_the_compiled_sum_is_numpys(values) -> None:
    array = np.array(values, dtype=np.float64)
    assert native.module().sum(array) == float(array.sum())


def test_the_summation_probe_passes_on_this_install() -> None:
    assert native.sums_like_numpy()


def test_a_binding_count_limit_goes_to_the_priced_path() -> None:
    inst = generated("memory", 200, 2, max_records=10)
    tokens, utility, budget, limits = _arrays(inst)
    assert solver._solve_in_one_call(tokens, utility, budget, **limits) is None
    answer = solve_arrays(tokens, utility, budget, **limits)
    assert int((answer.choice >= 0).sum()) == 10
    _same(answer, _by_engine(inst))
    loose = generated("memory", 200, 2, max_records=200)  # does not bind: one call
    tokens, utility, budget, limits = _arrays(loose)
    one = solver._solve_in_one_call(tokens, utility, budget, **limits)
    assert one is not None
    _same(one, _by_engine(loose))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda t, u: (t.__setitem__((1, 0), -1), {}), "tokens must be >= 0"),
        (lambda t, u: (u.__setitem__((0, 1), np.nan), {}), "utilities must be finite"),
        (lambda t, u: (u.__setitem__((2, 0), np.inf), {}), "utilities must be finite"),
        (lambda t, u: (u.__setitem__((2, 0), -0.5), {}), "utilities must be finite"),
        (lambda t, u: (u.__setitem__((2, 0), 2e15), {}), "utilities must be finite"),
        (lambda t, u: (None, {"price": float("nan")}), "price must be finite"),
        (lambda t, u: (None, {"price": -1.0}), "price must be finite"),
        (lambda t, u: (None, {"budget": -3}), "budget must be an integer"),
        (lambda t, u: (None, {"max_records": -1}), "max_records must be >= 0"),
        # found in review: past 64 bits the one call raised OverflowError or summed tokens past int64
        (lambda t, u: (None, {"budget": 2**63}), "budget must be an integer >= 0 and <= 2\\*\\*62"),
        (lambda t, u: (t.__setitem__((0, 0), 2**61), {"budget": 2**61}), "their sum could pass 2\\*\\*62"),
        (lambda t, u: (None, {"price": 10**400}), "price must be a finite number"),
    ],
)
def test_refused_inputs_get_the_python_paths_error(change, message) -> None:
    tokens = np.array([[5, 2], [4, 1], [3, 3]], dtype=np.int64)
    utility = np.array([[3.0, 1.0], [2.0, 1.5], [1.0, 0.5]])
    _, options = change(tokens, utility)
    budget = options.pop("budget", 6)
    assert solver._solve_in_one_call(tokens, utility, budget, **options) is None
    with pytest.raises(InputError, match=message):
        solve_arrays(tokens, utility, budget, **options)


@pytest.mark.parametrize("limits", [{"max_records": 2**70}, {"max_records": 2**62 + 1}, {"price": 10**30}])
def test_numbers_past_64_bits_take_the_python_path_and_get_its_answer(limits) -> None:
    tokens = np.array([[5, 2], [4, 1], [3, 3]], dtype=np.int64)
    utility = np.array([[3.0, 1.0], [2.0, 1.5], [1.0, 0.5]])
    assert solver._solve_in_one_call(tokens, utility, 6, **limits) is None
    _same(solve_arrays(tokens, utility, 6, **limits), _by_engine(solver.make_instance(tokens, utility, 6, **limits)))


@pytest.mark.parametrize("huge", [2**61, 2**62, 2**63 - 1])
def test_a_level_past_the_budget_may_take_any_number_of_tokens(huge) -> None:
    """Found in review: three rows with one level of 2**61 tokens were refused ('their sum could
    pass 2**62') although no such level fits a budget of 6: only levels that fit are summed."""
    tokens = np.array([[huge, 2], [4, 1], [3, 3]], dtype=np.int64)
    utility = np.array([[3.0, 1.0], [2.0, 1.5], [1.0, 0.5]])
    withheld = np.array([[False, True], [True, True], [True, True]])
    expected = solve_arrays(tokens, utility, 6, mask=withheld)
    one = solver._solve_in_one_call(tokens, utility, 6)
    assert one is not None
    _same(one, expected)
    _same(solve_arrays(tokens, utility, 6), expected)
    _same(_by_engine(solver.make_instance(tokens, utility, 6)), expected)
    for engine in ("cp-sat", "greedy"):
        assert solve_arrays(tokens, utility, 6, engine=engine).choice.tolist() == (
            expected.choice.tolist() if engine == "cp-sat" else solve_arrays(
                tokens, utility, 6, mask=withheld, engine="greedy").choice.tolist())


def test_a_withheld_level_may_hold_any_number() -> None:
    """A level the mask withholds is not checked (as make_instance), nor ever chosen."""
    tokens = np.array([[-5, 2], [4, 1]], dtype=np.int64)
    utility = np.array([[np.nan, 1.0], [2.0, 1.5]])
    mask = np.array([[False, True], [True, True]])
    one = solver._solve_in_one_call(tokens, utility, 5, mask=mask)
    assert one is not None and one.choice.tolist() == [1, 1]
    _same(one, _by_engine(solver.make_instance(tokens, utility, 5, mask=mask)))


def test_other_dtypes_and_layouts_take_the_python_path() -> None:
    tokens = np.array([[5, 2], [4, 1], [3, 3]], dtype=np.int32)
    utility = np.array([[3.0, 1.0], [2.0, 1.5], [1.0, 0.5]])
    assert solver._solve_in_one_call(tokens, utility, 6) is None
    assert solver._solve_in_one_call(tokens.astype(np.int64), utility, 6) is not None
    assert solver._solve_in_one_call(np.asfortranarray(tokens.astype(np.int64)), utility, 6) is None
    assert solver._solve_in_one_call(tokens.tolist(), utility, 6) is None
    expected = solve_arrays(tokens.astype(np.int64), utility, 6)
    for variant in (tokens, np.asfortranarray(tokens), tokens.tolist()):
        assert solve_arrays(variant, utility, 6).choice.tolist() == expected.choice.tolist()
    with pytest.raises(InputError, match="tokens must be integers"):
        solve_arrays(tokens.astype(float), utility, 6)


@pytest.mark.parametrize("scale_utility", [1e4, 1e9, 1e15])
def test_large_utilities_scale_as_the_python_path(scale_utility) -> None:
    """Past 2**52 / 10**6 in total the factor shrinks below 10**6 (the one pass redone); near the
    limit of 1e15 a level's value alone passes 2**63 at the usual factor."""
    rng = np.random.default_rng(11)
    tokens = rng.integers(1, 80, size=(400, 3))
    utility = rng.random((400, 3)) * scale_utility
    budget = int(tokens[:, 0].sum() // 3)
    inst = solver.make_instance(tokens, utility, budget, price=scale_utility / 1e3)
    one = solver._solve_in_one_call(tokens, utility, budget, price=scale_utility / 1e3)
    assert one is not None
    _same(one, _by_engine(inst))


# The engine's Job (pipeline, Selector): scaling, kernel and the allocation's worth in one call


def _job_outcome(inst, one_call: bool, monkeypatch: pytest.MonkeyPatch, engine: str = "dp", check: str = "none"):
    monkeypatch.setattr(engines.Job, "one_call", one_call)
    calls = []
    real = engines.solve_job
    monkeypatch.setattr(engines, "solve_job", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    job = engines.Job(inst)
    outcome = engines.check(job, engines.solve(job, engine), check, compare_greedy=False)
    return job, outcome, bool(calls)


def _same_job(fast, slow) -> None:
    """Every field the pipeline reads, to the bit: the allocation, its floats, the reduction, the scaled values."""
    (job_a, a), (job_b, b) = fast, slow
    sa, sb = a.solution, b.solution
    assert sa.choice.dtype == sb.choice.dtype == np.int64 and sa.choice.tolist() == sb.choice.tolist()
    for name in ("objective", "utility", "tokens_used", "status", "engine", "bound", "scaled_objective", "detail"):
        assert getattr(sa, name) == getattr(sb, name), name
        assert type(getattr(sa, name)) is type(getattr(sb, name)), name
    assert a.engine == b.engine and a.cross_check == b.cross_check
    assert job_a.scaled.scale == job_b.scaled.scale
    assert np.array_equal(job_a.scaled.values, job_b.scaled.values)
    assert job_a.scaled.usable.dtype == job_b.scaled.usable.dtype == np.bool_
    assert np.array_equal(job_a.scaled.usable, job_b.scaled.usable)
    ra, rb = a.reduction, b.reduction
    assert (ra is None) == (rb is None)
    if ra is not None:
        for name in ("multiplier", "upper_bound", "incumbent_value", "hull_levels", "lp_dominated"):
            assert getattr(ra, name) == getattr(rb, name), name
        for name in ("incumbent", "keep", "core", "fixed_choice"):
            assert np.array_equal(getattr(ra, name), getattr(rb, name)), name


@settings(max_examples=300, deadline=None)
@given(st.one_of(instances(max_n=8, max_k=4, integral=True), instances(max_n=8, max_k=3)))
def test_the_jobs_one_call_equals_its_separate_steps(inst) -> None:
    with pytest.MonkeyPatch.context() as mp:
        job, fast, used = _job_outcome(inst, True, mp)
        assert used  # the instances make_instance builds are in the kernel's layout
        slow = _job_outcome(inst, False, mp)
        _same_job((job, fast), slow[:2])


@pytest.mark.parametrize("kind", ["memory", "uncorrelated", "strong", "subset", "ties"])
@pytest.mark.parametrize(("n", "max_records"), [(0, None), (1, None), (150, None), (1200, None), (300, 40)])
def test_the_jobs_one_call_equals_its_separate_steps_on_every_class(kind, n, max_records, monkeypatch) -> None:
    inst = generated(kind, n, 5, max_records=max_records)
    job, fast, used = _job_outcome(inst, True, monkeypatch)
    assert used
    _same_job((job, fast), _job_outcome(inst, False, monkeypatch)[:2])
    for engine, check in (("cp-sat", "dp"), ("dp", "cp-sat")):  # the cross-checks read the same job
        if n <= 150:
            job, fast, _ = _job_outcome(inst, True, monkeypatch, engine, check)
            _same_job((job, fast), _job_outcome(inst, False, monkeypatch, engine, check)[:2])


@pytest.mark.parametrize("scale_utility", [1e9, 1e15])
def test_the_jobs_one_call_scales_large_utilities_as_the_separate_steps(scale_utility, monkeypatch) -> None:
    rng = np.random.default_rng(12)
    tokens = rng.integers(1, 80, size=(400, 3))
    utility = rng.random((400, 3)) * scale_utility
    inst = solver.make_instance(tokens, utility, int(tokens[:, 0].sum() // 3), price=scale_utility / 1e3)
    job, fast, used = _job_outcome(inst, True, monkeypatch)
    assert used and job.scaled.scale < 1e6
    _same_job((job, fast), _job_outcome(inst, False, monkeypatch)[:2])


def test_a_job_in_another_layout_takes_the_separate_steps(monkeypatch) -> None:
    inst = generated("memory", 50, 3)
    fortran = solver.Instance(np.asfortranarray(inst.tokens), inst.utility, inst.mask, inst.budget, inst.price)
    job, outcome, used = _job_outcome(fortran, True, monkeypatch)
    assert not used
    _same_job((job, outcome), _job_outcome(inst, True, monkeypatch)[:2])
