"""The shipped JSON Schemas are valid schemas (checked here, once, rather than in every process)."""

from __future__ import annotations

from importlib import resources

import jsonschema
import pytest

from memsolve import schemas

NAMES = sorted(p.name.removesuffix(".schema.json") for p in resources.files(schemas).iterdir()
               if p.name.endswith(".schema.json"))


def test_every_schema_is_shipped() -> None:
    assert NAMES == ["labelled", "policy", "policy-test", "records", "result"]


@pytest.mark.parametrize("name", NAMES)
def test_each_schema_and_each_of_its_definitions_is_a_valid_2020_12_schema(name: str) -> None:
    schema = schemas.load_schema(name)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)
    for definition in schema.get("$defs", {}):
        jsonschema.Draft202012Validator.check_schema(schemas.validator(name, definition).schema)


def test_a_broken_schema_is_refused_by_the_check() -> None:  # the check above can fail
    with pytest.raises(jsonschema.SchemaError):
        jsonschema.Draft202012Validator.check_schema({"type": "mapping"})
