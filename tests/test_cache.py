"""Cache-stable selection through the pipeline (DESIGN §15): the prompt order, the cache block,
the cache objective's choices and trace, the Selector's memory of the last prompt order."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import memsolve
from memsolve.cache import PROVIDERS, Placed, PromptOrder, Rates, dollars, intact_prefix, prompt_order, reused
from memsolve.policies.model import CacheSettings
from memsolve.result import Chosen
from memsolve.schemas import validator
from memsolve.selector import Selector

from .conftest import make_policy, rec

CACHED = "cache: {{provider: anthropic-5m, input_price: 3, value_per_dollar: {value}, min_prefix: 0}}\n"


def policy(budget: int, cache: str = "", engine: str = "dp", cross_check: str = "dp") -> memsolve.Policy:
    return make_policy(f"budget: {{tokens: {budget}}}\nfidelity: [raw, summary]\n"
                       f"solver: {{engine: {engine}, cross_check: {cross_check}}}\n" + cache)


def records(utilities: dict[str, float], tokens: int = 100) -> list[dict]:
    return [rec(rid, tokens=tokens, utility=u) for rid, u in utilities.items()]


def test_prompt_order_keeps_the_unchanged_first_in_the_previous_order_then_the_rest_by_id() -> None:
    def chosen(rid: str, level: str = "raw", text: str = "t") -> Chosen:
        return Chosen(rid, level, 3, 1.0, text)

    previous = PromptOrder.of([chosen("c"), chosen("a"), chosen("b"), chosen("d")], ["c", "a", "b", "d"])
    now = [chosen("a"), chosen("b", "summary"), chosen("c"), chosen("e"), chosen("d", text="edited")]
    # b changed level, d changed text: both count as new; e is new
    assert prompt_order(now, previous) == ("c", "a", "b", "d", "e")
    assert prompt_order(now, None) == ("a", "b", "c", "d", "e")
    assert prompt_order([chosen("a"), chosen("c")], previous) == ("c", "a")


def test_ordering_alone_never_changes_the_selection_and_keeps_the_json() -> None:
    p = policy(300)
    turns = [{"a": 5, "b": 4, "c": 3, "d": 1}, {"a": 1, "b": 4, "c": 3, "d": 5},
             {"a": 1, "b": 4, "c": 3, "d": 5, "e": 9}]
    selector = Selector(p, records(turns[0]))
    orders: list[tuple[str, ...]] = []
    for utilities in turns:
        selector = _carry(selector, p, records(utilities))
        result = selector.select(now=1, trace="full")
        fresh = memsolve.solve(p, memsolve.load_records(records(utilities)), memsolve.Context(now=1))
        assert result.to_json() == fresh.to_json()  # no cache block: the JSON is the plain one
        assert [c.id for c in result.selected] == [c.id for c in fresh.selected]
        orders.append(result.prompt_order)
    assert orders[0] == ("a", "b", "c")
    assert orders[1] == ("b", "c", "d")  # b and c stayed, in their order; d is new
    assert orders[2] == ("b", "d", "e")  # c left; b and d stayed, in their order; e is new


def _carry(old: Selector, p: memsolve.Policy, recs: list[dict]) -> Selector:
    """A selector over new records that remembers the old one's prompt orders (utilities changed)."""
    new = Selector(p, recs)
    new.prompt_orders = old.prompt_orders
    return new


def test_the_cache_keeps_a_prefix_that_the_knapsack_alone_would_break() -> None:
    first = {"a": 5.0, "b": 4.0, "c": 1.0}
    then = {"a": 3.0, "b": 4.0, "c": 3.2}  # alone, c (3.2) now beats a (3.0) for the second place
    plain = memsolve.solve(policy(200), memsolve.load_records(records(then)), memsolve.Context(now=1))
    assert {c.id for c in plain.selected} == {"b", "c"}

    # a was first in the previous prompt: keeping it keeps a and b (200 tokens) cached, read at 0.1x
    # instead of written at 1.25x: 200 · 1.15 · $3/M = $0.00069, worth 0.69 at 1000 per dollar > 0.2
    selector = Selector(policy(200, CACHED.format(value=1000)), records(first))
    selector.select(now=1)
    kept = _carry(selector, policy(200, CACHED.format(value=1000)), records(then)).select(now=1)
    assert kept.prompt_order == ("a", "b")
    trace = kept.cache.to_dict()
    assert trace["prefix"] == {"records": 2, "tokens": 200, "reused": 200}
    assert trace["first_change"] is None
    assert trace["cost"]["dollars"] == pytest.approx(3e-6 * 0.1 * 200)
    assert trace["cost"]["uncached"] == pytest.approx(3e-6 * 1.25 * 200)
    assert kept.solver.status == "optimal" and kept.solver.cross_check["agrees"] is True

    # at 100 per dollar the cache is worth 0.069 < 0.2: c comes in, and the trace says what it cost
    selector = Selector(policy(200, CACHED.format(value=100)), records(first))
    selector.select(now=1)
    changed = _carry(selector, policy(200, CACHED.format(value=100)), records(then)).select(now=1)
    assert changed.prompt_order == ("b", "c")
    trace = changed.cache.to_dict()
    assert trace["prefix"] == {"records": 0, "tokens": 0, "reused": 0}
    change = trace["first_change"]
    assert change["id"] == "a" and change["was"] == "raw" and change["now"] == "dropped"
    # with the change: 200 tokens written; without: a and b read (the prefix), nothing written
    assert trace["cost"]["dollars"] == pytest.approx(3e-6 * 1.25 * 200)
    assert trace["cost"]["without_change"] == pytest.approx(3e-6 * 0.1 * 200)
    # the gain: (3.2 − 3.0) in utility less the cache's value lost: with a gone, b moves up and is
    # written again too, so 200 tokens at (1.25 − 0.1) · $3/M, worth 100 per dollar
    assert change["gain"] == pytest.approx(0.2 - 100 * 3e-6 * 1.15 * 200)
    assert change["objective_without"] == pytest.approx(changed.objective - change["gain"])


def test_a_cache_result_is_schema_valid_and_byte_identical() -> None:
    p = policy(200, CACHED.format(value=1000))
    first = Selector(p, records({"a": 5.0, "b": 4.0, "c": 1.0}))
    first.select(now=1)
    runs = []
    for _ in range(2):
        selector = _carry(first, p, records({"a": 3.0, "b": 4.0, "c": 3.2}))
        runs.append(selector.select(now=1, trace="full").to_json())
    assert runs[0] == runs[1]
    data = json.loads(runs[0])
    assert list(validator("result").iter_errors(data)) == []
    assert data["prompt_order"] == ["a", "b"] and data["cache"]["provider"] == "anthropic-5m"
    assert data["cache"]["cuts"]["solved"] + data["cache"]["cuts"]["pruned"] + data["cache"]["cuts"]["infeasible"] == 3


def test_the_cp_sat_cross_check_agrees_on_the_cache_objective() -> None:
    p = policy(200, CACHED.format(value=1000), engine="cp-sat", cross_check="cp-sat")
    selector = Selector(p, records({"a": 5.0, "b": 4.0, "c": 1.0}))
    selector.select(now=1)
    result = _carry(selector, p, records({"a": 3.0, "b": 4.0, "c": 3.2})).select(now=1)
    assert result.solver.cross_check == {"engine": "cp-sat", "objective": pytest.approx(result.objective),
                                         "agrees": True}


def test_providers_round_the_reused_prefix_as_they_bill_it() -> None:
    openai = PROVIDERS["openai"]
    assert reused(openai, 1023) == 0 and reused(openai, 1024) == 1024 and reused(openai, 1279) == 1152
    anthropic = PROVIDERS["anthropic-5m"]
    assert reused(anthropic, 1023) == 0 and reused(anthropic, 1500) == 1500
    assert reused(Rates(0.1, 1.25, 1, 0), 0) == 0 and reused(Rates(0.1, 1.25, 1, 0), 7) == 7
    settings = CacheSettings("anthropic-1h", 3.0, 1.0, prefix_tokens=2000)
    # 2,000 fixed tokens + 500 memory tokens, 2,300 read: 2,300 · 0.1 + 200 · 2.0
    assert dollars(settings, 500, 2300) == pytest.approx(3e-6 * (230 + 400))


def test_the_fixed_prefix_and_minimum_prefix_enter_the_objective() -> None:
    # 1,100 fixed tokens reach Anthropic's 1,024 minimum on their own: the first turn writes
    # them, every later turn reads them; the memories after them follow the same rule
    p = policy(300, "cache: {provider: anthropic-5m, input_price: 3, value_per_dollar: 1000, prefix_tokens: 1100}\n")
    selector = Selector(p, records({"a": 5.0, "b": 4.0}))
    cold = selector.select(now=1)
    assert cold.cache.reused_tokens == 0 and cold.cache.previous is None
    warm = selector.select(now=1)
    assert warm.cache.reused_tokens == 1300 and warm.cache.first_change is None
    assert warm.cache.cost["dollars"] == pytest.approx(3e-6 * 0.1 * 1300)
    # the objective is utility less value_per_dollar times the modelled cost
    assert warm.objective == pytest.approx(9.0 - 1000 * 3e-6 * 0.1 * 1300)


@pytest.mark.parametrize("block, message", [
    ("cache: {provider: anthropic, input_price: 3, value_per_dollar: 1}\n", "anthropic-5m"),
    ("cache: {provider: openai, input_price: 2}\n", "value_per_dollar"),
    ("cache: {provider: openai, input_price: 2, value_per_dollar: 1, read: 2}\n", "below the read multiplier"),
])
def test_a_bad_cache_block_is_one_located_error(block: str, message: str) -> None:
    with pytest.raises(memsolve.InputError) as caught:
        policy(100, block)
    assert message in str(caught.value) and "policy.yaml" in str(caught.value)


def test_provider_none_orders_and_traces_without_a_price() -> None:
    p = policy(200, "cache: {provider: none}\n")
    selector = Selector(p, records({"a": 5.0, "b": 4.0, "c": 1.0}))
    selector.select(now=1)
    result = selector.select(now=1)
    assert result.prompt_order == ("a", "b") and result.cache.cost == {"dollars": 0.0, "uncached": 0.0}
    assert result.objective == pytest.approx(9.0)


def test_with_state_the_selector_keeps_the_prompt_order_per_agent(tmp_path) -> None:
    p = policy(200)
    state = memsolve.StateStore(tmp_path / "state.db")
    one = Selector(p, records({"b": 5.0, "a": 4.0, "c": 1.0}), state=state, agent="one")
    first = one.select(now=1)
    assert first.prompt_order == ("a", "b") and first.round == 1
    # round 2: b is worth less now and d is new (c, dropped in round 1, never returns on its own)
    later = records({"b": 1.0, "a": 4.0, "c": 5.0, "d": 5.0})
    carried = Selector(p, later, state=state, agent="one")
    carried.prompt_orders = one.prompt_orders  # the same agent's memory, over records whose utilities changed
    second = carried.select(now=1)
    assert second.round == 2 and second.prompt_order == ("a", "d")
    other = Selector(p, later, state=state, agent="two")
    assert other.select(now=1).prompt_order == ("c", "d") and other.prompt_orders.keys() == {None}


def _versions() -> st.SearchStrategy[list[dict]]:
    """Records r0..r5 over turns: each turn's utilities, and some records' text or sizes changed."""
    record = st.fixed_dictionaries({
        "utility": st.sampled_from([0.5, 1.0, 2.0, 3.0]), "raw": st.integers(1, 4), "summary": st.integers(1, 2),
        "text": st.sampled_from(["alpha", "beta", None]), "here": st.booleans(),
    })
    return st.lists(st.lists(record, min_size=6, max_size=6), min_size=2, max_size=4)


def _turn_records(turn: list[dict]) -> list[dict]:
    out = []
    for i, r in enumerate(turn):
        if not r["here"] and i % 2:
            continue  # removed this turn
        levels = {"raw": {"tokens": r["raw"], "utility": r["utility"]},
                  "summary": {"tokens": r["summary"], "utility": r["utility"] / 2, "text": f"s{r['summary']}"}}
        if r["text"] is not None:
            levels["raw"]["text"] = r["text"]
        out.append({"id": f"r{i}", "timestamp": 0, "representations": levels})
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(turns=_versions(), carry=st.sampled_from(["same", "new", "stored"]), cached=st.booleans())
def test_the_arrays_order_as_the_records_do(turns: list[list[dict]], carry: str, cached: bool) -> None:
    """The prompt order over the rows (records held by the process, found by place or id, or
    read back as digests) is the order :func:`prompt_order` gives over the selected records."""
    p = policy(6, CACHED.format(value=1000) if cached else "")
    selector = Selector(p, _turn_records(turns[0]))
    previous = None
    for turn in turns:
        if carry == "same":  # the same Selector: changed records removed and added again
            selector.remove([r.id for r in selector.records.records])
            selector.add(_turn_records(turn))
        else:
            selector = _carry(selector, p, _turn_records(turn))
            if carry == "stored" and None in selector.prompt_orders:  # as read back from state
                selector.prompt_orders[None] = PromptOrder.from_dicts(selector.prompt_orders[None].to_list())
        result = selector.select(now=1, trace="none")
        chosen = list(result.selected)
        assert result.prompt_order == prompt_order(chosen, previous)
        if cached:
            kept = 0 if previous is None else sum(
                1 for placed in previous.placed if placed in {Placed.of(c) for c in chosen})
            assert result.cache.kept == kept
            assert result.cache.prefix_records == intact_prefix(result.prompt_order, chosen, previous)
        previous = PromptOrder.of(chosen, result.prompt_order)
        assert selector.prompt_orders[None] == previous  # the arrays' ids, levels, tokens and digests
        again = selector.select(now=1, trace="none")  # the same records: found by place, nothing compared
        assert again.prompt_order == prompt_order(list(again.selected), previous) == result.prompt_order
        if cached:
            assert again.cache.prefix_records == len(previous) and again.cache.first_change is None


def test_the_table_shows_the_prompt_order_and_the_cache_trace() -> None:
    import io

    from memsolve.render import result_table

    def table(result: memsolve.Result) -> list[str]:
        out = io.StringIO()
        result_table(result, out)
        return out.getvalue().splitlines()

    p = policy(200, CACHED.format(value=100))
    selector = Selector(p, records({"c": 1.0, "b": 4.0, "a": 5.0}))
    first = table(selector.select(now=1))
    assert "Selected, in prompt order" in first[1] and "cache      anthropic-5m: no previous prompt" in first
    rows = [line.split("│")[1:-1] for line in first if line.startswith("│")]
    assert [[cell.strip() for cell in row[:3]] for row in rows[:2]] == [["1", "a", "raw"], ["2", "b", "raw"]]
    carried = _carry(selector, p, records({"a": 3.0, "b": 4.0, "c": 3.2}))
    changed = carried.select(now=1)
    lines = table(changed)
    rows = [[cell.strip() for cell in line.split("│")[1:-1]] for line in lines if line.startswith("│")]
    assert rows[:2] == [["1", "b", "raw", "100", "4", ""], ["2", "c", "raw", "100", "3.2", ""]]
    assert "cache      anthropic-5m: 0 of 2 previous records intact at the head (0 tokens; 0 read from the cache), " \
           "1 kept" in lines
    change = changed.cache.first_change
    assert f"           first change a raw -> dropped: {change['reason']} (gain {change['gain']:.6g})" in lines
    assert any(line.startswith("           input $0.00075 modelled (uncached $0.00075, without the change $6e-05)")
               for line in lines)
    kept = carried.select(now=1)  # the same records again: the whole prompt is the intact prefix
    assert [r[-1] for r in ([c.strip() for c in line.split("│")[1:-1]] for line in table(kept)
                            if line.startswith("│"))][:2] == ["intact prefix", "intact prefix"]
    plain = table(Selector(policy(200), records({"a": 5.0, "b": 4.0})).select(now=1))
    assert plain[1].startswith("Selected ") and not any(line.startswith("cache ") for line in plain)
