"""What every importer shares: the README's table is the code's, nothing is lost, output is stable."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memsolve import adapters
from memsolve.errors import InputError

from ..conftest import DATA, ROOT

MEM0 = {"id": "m1", "memory": "likes tea", "user_id": "u", "created_at": "2026-11-01T00:00:00Z"}
_NAME = st.text(st.characters(min_codepoint=97, max_codepoint=122), min_size=1, max_size=8)
_VALUE = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                      lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_NAME, inner, max_size=3),
                      max_leaves=6)


def test_the_readme_shows_the_mapping_table_of_the_code() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert adapters.mapping_table() in readme


@given(st.dictionaries(_NAME.filter(lambda n: n not in MEM0 and n not in {"updated_at", "agent_id", "run_id",
                                                                           "score"}), _VALUE, max_size=5))
def test_every_field_no_record_field_takes_is_kept_in_metadata(extra) -> None:
    (record,) = adapters.from_mem0([{**MEM0, **extra}]).records
    assert record.get("metadata", {}) == extra


def test_a_chosen_field_leaves_metadata_and_a_missing_one_is_named() -> None:
    item = {**MEM0, "metadata": {"fact": "drink", "other": 1}}
    (record,) = adapters.from_mem0([item], key_from="metadata.fact").records
    assert record["key"] == "drink" and record["metadata"] == {"metadata": {"other": 1}}
    with pytest.raises(InputError, match=r"<mem0>: \[0\]\.nope: no `nope` to take the text from"):
        adapters.from_mem0([item], text_from="nope")
    with pytest.raises(InputError, match="field path `metadata..x` is empty"):
        adapters.from_mem0([item], key_from="metadata..x")


@pytest.mark.parametrize("source", sorted(adapters.SOURCES))
def test_an_item_that_is_not_a_mapping_is_named_by_type_not_content(source) -> None:
    with pytest.raises(InputError) as caught:
        adapters.import_items(source, ["secret text"])
    assert "secret" not in caught.value.render() and "[0]" in caught.value.render()


def test_times_without_an_offset_are_utc_and_counted() -> None:
    imported = adapters.from_mem0([{**MEM0, "created_at": "2026-11-01T10:00:00"}])
    assert imported.records[0]["timestamp"] == "2026-11-01T10:00:00Z"
    assert imported.utc_assumed == 1 and "1 times without an offset read as UTC" in imported.summary("f")


def test_the_output_is_byte_identical_and_loads_as_records() -> None:
    first = adapters.import_file("graphiti", str(DATA / "adapters" / "graphiti.json")).jsonl()
    second = adapters.import_file("graphiti", str(DATA / "adapters" / "graphiti.json")).jsonl()
    assert first == second and all(json.loads(line)["id"] for line in first.splitlines())


@pytest.mark.parametrize("text", ['{"memories": 3}', '"just a string"', "[1, 2"])
def test_a_file_that_is_no_export_is_one_line(tmp_path, text) -> None:
    path = tmp_path / "export.json"
    path.write_text(text)
    with pytest.raises(InputError) as caught:
        adapters.import_file("mem0", str(path))
    assert re.match(rf"{re.escape(str(path))}(:\d+)*: ", caught.value.render())


def test_an_unknown_source_suggests_one() -> None:
    with pytest.raises(InputError, match="did you mean `mem0`"):
        adapters.import_items("memo", [])
