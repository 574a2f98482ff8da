"""Knobs as edits of the policy text: read, written back with comments and layout kept."""

from __future__ import annotations

import pytest

from ..conftest import ROOT
from .conftest import POLICY, extra

pytestmark = extra

TEXT = (ROOT / POLICY).read_text(encoding="utf-8")


def _knobs():
    from memsolve.workbench import knobs

    return knobs


def test_read_gives_the_policy_values_as_form_fields() -> None:
    knobs = _knobs()
    values = knobs.read(knobs.load(TEXT, POLICY))
    assert values == {"query": "", "tenant": "", "stores": "semantic, episodic, procedural, working",
                      "include_previous": True, "max_age": "168", "latest_key": True, "budget": "80",
                      "max_records": "1", "recency_weight": "0", "engine": "cp-sat", "fidelity": "raw",
                      "price_c": "", "price_q0": ""}


def test_an_edit_keeps_comments_and_every_other_line() -> None:
    knobs = _knobs()
    data = knobs.load(TEXT, POLICY)
    knobs.apply(data, "recency_weight", "1")
    edited = knobs.dump(data)
    before, after = TEXT.splitlines(), edited.splitlines()
    changed = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
    assert len(before) == len(after)
    assert changed == [("  - relevance: {recency_weight: 0, half_life: 24}",
                        "  - relevance: {recency_weight: 1, half_life: 24}")]


def test_empty_fields_remove_optional_settings_and_toggles_remove_rules() -> None:
    knobs = _knobs()
    data = knobs.load(TEXT, POLICY)
    for name, field in [("max_age", ""), ("max_records", ""), ("latest_key", False), ("tenant", "team-b"),
                        ("query", "timeout")]:
        knobs.apply(data, name, field)
    text = knobs.dump(data)
    assert "max_age" not in text and "max_records" not in text and "latest_key" not in text
    assert "tenant: team-b\ncontext: {query: timeout}\nbudget:" in text
    values = knobs.read(knobs.load(text, POLICY))
    assert (values["max_age"], values["max_records"], values["latest_key"]) == ("", "", False)
    knobs.apply(data, "latest_key", True)
    knobs.apply(data, "max_age", "48")
    rules = [next(iter(rule)) for rule in data["rules"]]
    assert rules == ["stores", "sessions", "max_age", "latest_key", "relevance"]  # back in their places


def test_values_are_read_as_yaml_like_set() -> None:
    knobs = _knobs()
    data = knobs.load(TEXT, POLICY)
    knobs.apply(data, "budget", "-1")
    knobs.apply(data, "stores", "episodic, working")
    knobs.apply(data, "include_previous", False)
    assert data["budget"]["tokens"] == -1  # the loader, not the form, says what is wrong with it
    assert list(data["rules"][0]["stores"]["allow"]) == ["episodic", "working"]
    assert data["rules"][1]["sessions"]["include_previous"] is False


@pytest.mark.parametrize(("path", "field"), [
    ("budget.tokens", "budget"), ("budget.max_records", "max_records"), ("rules[0].stores.allow[0]", "stores"),
    ("rules[2].max_age", "max_age"), ("rules[4].relevance.recency_weight", "recency_weight"),
    ("fidelity[1]", "fidelity"), ("solver.engine", "engine"), ("context.query", "query"), ("tenant", "tenant"),
    ("utility.retention", None), ("rules[9]", None),
])
def test_an_error_path_names_its_knob(path: str, field: str | None) -> None:
    knobs = _knobs()
    assert knobs.field_of(knobs.load(TEXT, POLICY), path) == field


def test_a_required_field_cannot_be_emptied_and_unknown_knobs_are_refused() -> None:
    from memsolve.errors import InputError

    knobs = _knobs()
    data = knobs.load(TEXT, POLICY)
    with pytest.raises(InputError, match="budget: a value is required"):
        knobs.apply(data, "budget", " ")
    with pytest.raises(InputError, match="unknown knob `colour`"):
        knobs.apply(data, "colour", "red")
