"""The shipped JSON Schemas are valid schemas (checked here, once, rather than in every process), and
:func:`memsolve.schemas.conforms` answers as jsonschema does."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from memsolve import schemas
from memsolve.errors import InputError
from memsolve.source import Document

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


# --- conforms: jsonschema's answer without importing it ----------------------------------

ROOT = Path(__file__).resolve().parents[1]
CORPUS = {  # documents of each schema (valid ones: the mutations below make the invalid ones)
    "policy": sorted((ROOT / "policies").glob("*.yaml")) + [ROOT / "tests/data/labelled/policy.yaml"],
    "policy-test": [ROOT / "policies/tests/team-a.yaml"],
    "labelled": [ROOT / "examples/incidents/labelled.yaml", ROOT / "tests/data/labelled/alpha.labelled.yaml"],
    "records": [ROOT / "examples/shared.json", ROOT / "examples/incidents/records.json",
                ROOT / "examples/ch15/base.json"],
}
# values a mutation puts somewhere: each type, the bounds the schemas draw (0, 1, 1e6, 1e15),
# integral floats (an integer to jsonschema), bools (never a number), patterns' edges
EDGES = [None, True, False, 0, 1, -1, 0.0, 1.0, 0.5, -0.5, 2, 3.0, 1e6, 1e6 + 1, 1e15, 1e15 + 1, 10**16, 2.5e-7, "",
         "x", "raw", "delete", "semantic", "memsolve/v1", "MemoryPolicy", "A", "a-b", "-a", "10s", [], [1], ["x"],
         ["x", "x"], ["raw", "summary"], {}, {"x": 1}, {"tokens": 1}, {"allow": ["semantic"]}]


def _documents(name: str) -> list[Any]:
    out = []
    for path in CORPUS[name]:
        data = yaml.safe_load(path.read_text()) if path.suffix == ".yaml" else json.loads(path.read_text())
        out.append(data)
    return out


def _places(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into a document (the document itself first)."""
    out = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            out += _places(item, path + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out += _places(item, path + (index,))
    return out


def _mutated(document: Any, path: tuple[Any, ...], how: str, edge: Any) -> Any:
    document = copy.deepcopy(document)
    if not path:
        return edge
    parent = document
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    if how == "replace":
        parent[last] = copy.deepcopy(edge)
    elif how == "drop":
        del parent[last]
    elif isinstance(parent[last], dict) and isinstance(edge, str):  # a key added
        parent[last][edge] = 1
    elif isinstance(parent[last], list):  # an item added
        parent[last].append(copy.deepcopy(edge))
    else:
        parent[last] = copy.deepcopy(edge)
    return document


def _jsonschema_says(name: str, data: Any) -> bool:
    return schemas.first_error(schemas.validator(name), data) is None


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_the_corpus_conforms(name: str) -> None:
    for document in _documents(name):
        assert schemas.conforms(name, document) and _jsonschema_says(name, document)


@pytest.mark.parametrize("name", sorted(CORPUS))
@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_conforms_answers_as_jsonschema_does(name: str, data: st.DataObject) -> None:
    document = data.draw(st.sampled_from(_documents(name)))
    for _ in range(data.draw(st.integers(1, 3))):  # one to three changes, anywhere
        path = data.draw(st.sampled_from(_places(document)))
        how = data.draw(st.sampled_from(["replace", "drop", "add"] if path else ["replace"]))
        document = _mutated(document, path, how, data.draw(st.sampled_from(EDGES)))
    fast = schemas.conforms(name, document)
    assert fast == _jsonschema_says(name, document)  # never valid where jsonschema refuses, nor the reverse


def test_conforms_leaves_what_it_cannot_tell_to_jsonschema() -> None:
    # values no JSON document holds (a Decimal, a datetime from YAML, NaN) and numbers as keys:
    # conforms never says "valid" for them; check() asks jsonschema, which decides and words it
    from datetime import datetime
    from decimal import Decimal

    policy = yaml.safe_load((ROOT / "policies/team-a.yaml").read_text())
    assert schemas.conforms("policy", policy)
    for odd in (Decimal(5), datetime(2026, 1, 1), float("nan")):
        policy["budget"]["tokens"] = odd
        assert not schemas.conforms("policy", policy)
        with pytest.raises(InputError, match="budget.tokens"):
            schemas.check(Document("p.yaml", "", policy, "yaml"), policy, "policy")
    assert not schemas.conforms("records", {"id": "a", "timestamp": 1, "tokens": 1, 5: "numeric key"}, "record")


def test_the_pipeline_does_not_import_jsonschema_for_valid_inputs() -> None:
    # importing it costs a CLI round ~45 ms; it words errors only (run in a fresh interpreter)
    code = ("import sys, memsolve; memsolve.solve(memsolve.load_policy('policies/team-a.yaml'), "
            "memsolve.load_records('examples/shared.json')); print('jsonschema' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    code = ("import sys, memsolve\ntry:\n    memsolve.policy_from_text('kind: 1')\nexcept memsolve.InputError as e:\n"
            "    print(e)\nprint('jsonschema' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip().endswith("True")


@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_conforms_answers_as_jsonschema_does_for_one_record(data: st.DataObject) -> None:
    records = [r for document in _documents("records")
               for r in (document["records"] if isinstance(document, dict) else document)]
    record = data.draw(st.sampled_from(records))
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(_places(record)))
        how = data.draw(st.sampled_from(["replace", "drop", "add"] if path else ["replace"]))
        record = _mutated(record, path, how, data.draw(st.sampled_from(EDGES)))
    says = schemas.first_error(schemas.validator("records", "record"), record) is None
    assert schemas.conforms("records", record, "record") == says


def test_the_schemas_are_read_from_a_zip_archive_too(tmp_path: Path) -> None:
    # a zipapp or a wheel on sys.path: the schema beside the module is no file, and
    # importlib.resources reads it from the archive (a valid policy loads, a bad one is worded)
    import zipfile

    package = Path(schemas.__file__).parents[1]
    archive = tmp_path / "memsolve.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for path in package.rglob("*"):
            if path.suffix in (".py", ".json"):
                z.write(path, path.relative_to(package.parent).as_posix())
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import memsolve\n"
        "assert memsolve.__file__.startswith(sys.argv[1]), memsolve.__file__\n"
        "head = 'apiVersion: memsolve/v1\\nkind: MemoryPolicy\\nmetadata: {name: t}\\n'\n"
        "memsolve.policy_from_text(head + 'budget: {tokens: 5}\\n', 't.yaml')\n"
        "try:\n    memsolve.policy_from_text(head + 'budget: {tokens: -5}\\n', 't.yaml')\n"
        "except memsolve.InputError as e:\n    print('refused:', e)\n")
    proc = subprocess.run([sys.executable, "-c", code, str(archive)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "refused: t.yaml:4" in proc.stdout and "tokens" in proc.stdout
