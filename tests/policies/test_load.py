"""Policy loading: schema errors name file:line:column, the path and what was expected."""

from __future__ import annotations

from pathlib import Path

import pytest

import memsolve

from ..conftest import ROOT, write

HEAD = "apiVersion: memsolve/v1\nkind: MemoryPolicy\nmetadata: {name: p}\n"


def load_error(tmp_path: Path, text: str) -> memsolve.InputError:
    path = write(tmp_path, "p.yaml", text)
    with pytest.raises(memsolve.InputError) as info:
        memsolve.load_policy(path)
    return info.value


@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "policies").glob("*.yaml")))
def test_bundled_policies_load(name: str) -> None:
    policy = memsolve.load_policy(ROOT / "policies" / name)
    assert name.removesuffix(".yaml").startswith(policy.name)  # team-a-next.yaml proposes a change to team-a
    assert len(policy.sha256) == 64


def test_defaults() -> None:
    policy = memsolve.policy_from_text(HEAD)
    assert policy.fidelity == ("raw", "summary", "abstraction", "keywords")
    assert policy.stores == ("semantic", "episodic", "procedural", "working")
    assert (policy.pricing.c, policy.pricing.alpha, policy.pricing.q0) == (1.0, 0.8, 0.0)
    assert (policy.solver.engine, policy.solver.cross_check) == ("cp-sat", "dp")
    assert policy.on_invalid_record == "error"


def test_missing_required_field(tmp_path: Path) -> None:
    error = load_error(tmp_path, "kind: MemoryPolicy\nmetadata: {name: p}\n")
    assert error.render() == f"{tmp_path / 'p.yaml'}:1:1: `apiVersion` is required"


def test_wrong_api_version_points_at_the_value(tmp_path: Path) -> None:
    error = load_error(tmp_path, HEAD.replace("memsolve/v1", "memsolve/v2"))
    assert (error.line, error.column, error.path) == (1, 13, "apiVersion")
    assert "expected `memsolve/v1`" in error.message


def test_unknown_key_suggests_the_close_one(tmp_path: Path) -> None:
    error = load_error(tmp_path, HEAD + "budjet: {tokens: 5}\n")
    assert (error.line, error.path) == (4, "budjet")
    assert error.message == "unknown field `budjet`; did you mean `budget`?"


def test_unknown_rule_type_suggests_the_spelling(tmp_path: Path) -> None:
    error = load_error(tmp_path, HEAD + "rules:\n  - max-age: 5\n")
    assert (error.line, error.column, error.path) == (5, 5, "rules[0].max-age")  # at the key
    assert "did you mean `max_age`?" in error.message


def test_rule_with_two_types_is_rejected(tmp_path: Path) -> None:
    error = load_error(tmp_path, HEAD + "rules:\n  - {max_age: 5, latest_key: {}}\n")
    assert error.line == 5 and "exactly one rule type" in error.message


def test_wrong_type_names_expected_and_got(tmp_path: Path) -> None:
    error = load_error(tmp_path, HEAD + "budget:\n  tokens: lots\n")
    assert (error.line, error.column, error.path) == (5, 11, "budget.tokens")
    assert error.message == "expected an integer, got `lots`"


def test_negative_budget(tmp_path: Path) -> None:
    error = load_error(tmp_path, HEAD + "budget: {tokens: -1}\n")
    assert error.path == "budget.tokens" and ">= 0" in error.message


def test_store_not_declared(tmp_path: Path) -> None:
    error = load_error(tmp_path, HEAD + "rules:\n  - stores: {allow: [semantic, episodc]}\n")
    assert error.path == "rules[0].stores.allow[1]" and "did you mean `episodic`?" in error.message


def test_duplicate_rule_ids(tmp_path: Path) -> None:
    error = load_error(tmp_path, HEAD + "rules:\n  - max_age: 5\n  - max_age: 6\n")
    assert error.line == 6 and "used twice" in error.message


def test_reserved_rule_id(tmp_path: Path) -> None:
    error = load_error(tmp_path, HEAD + "rules:\n  - {id: tenant, max_age: 5}\n")
    assert "reserved" in error.message


def test_duplicate_yaml_key(tmp_path: Path) -> None:
    error = load_error(tmp_path, HEAD + "tenant: a\ntenant: b\n")
    assert (error.line, error.message) == (5, "duplicate key `tenant`")


def test_invalid_yaml_has_a_line(tmp_path: Path) -> None:
    error = load_error(tmp_path, HEAD + "rules: [\n")
    assert error.line is not None and error.message.startswith("invalid YAML")


def test_yaml_nan_is_rejected(tmp_path: Path) -> None:
    error = load_error(tmp_path, HEAD + "pricing: {c: .nan}\n")
    assert error.path == "pricing.c" and "finite" in error.message


def test_not_a_mapping(tmp_path: Path) -> None:
    error = load_error(tmp_path, "- just a list\n")
    assert "must be a mapping" in error.message


def test_retention_levels_must_be_fidelity_levels(tmp_path: Path) -> None:
    error = load_error(tmp_path, HEAD + "utility: {from: relevance, retention: {raww: 1.0}}\n")
    assert error.path == "utility.retention.raww" and "did you mean `raw`?" in error.message


def test_a_retention_is_bounded_as_a_records_utility_is(tmp_path: Path) -> None:
    # retention times a probability is a level's utility: past 1e15 a sum of them could overflow
    error = load_error(tmp_path, HEAD + "utility: {from: relevance, retention: {raw: 1e308}}\n")
    assert error.path == "utility.retention.raw" and error.location.line == HEAD.count("\n") + 1
    policy = memsolve.policy_from_text(HEAD + "utility: {from: relevance, retention: {raw: 1.0e15}}\n", "p.yaml")
    assert policy.utility.retention == {"raw": 1e15}  # the bound itself is allowed


def test_missing_file() -> None:
    with pytest.raises(memsolve.InputError, match="file not found"):
        memsolve.load_policy("no/such/policy.yaml")


def test_records_path_is_relative_to_the_policy() -> None:
    policy = memsolve.load_policy(ROOT / "policies/team-a.yaml")
    assert Path(policy.records).resolve() == (ROOT / "examples/shared.json").resolve()


def test_exponent_numbers_without_a_dot_are_numbers() -> None:
    # regression (found by the ceiling property test): PyYAML alone reads `1e-09` as a string
    policy = memsolve.policy_from_text(HEAD + "pricing: {c: 1e-09, alpha: 5E-1, q0: 2e3}\n")
    assert (policy.pricing.c, policy.pricing.alpha, policy.pricing.q0) == (1e-09, 0.5, 2000.0)


@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "tests/data/fuzz").iterdir()))
def test_fuzz_found_inputs_are_input_errors(name: str) -> None:
    # inputs fuzz/fuzz_loaders.py found crashing (null or numeric YAML keys reached difflib)
    path = ROOT / "tests/data/fuzz" / name
    with pytest.raises(memsolve.InputError):
        memsolve.load_policy(path) if name.endswith(".yaml") else memsolve.load_records(path)


@pytest.mark.parametrize("mapping", ["{raw: ,1.0}", "{raw: x, 2: y}", "{1.5: a, true: b, raw: c, null: d}"])
def test_number_keys_beside_string_keys_are_one_located_error(tmp_path: Path, mapping: str) -> None:
    # found by fuzz/fuzz_loaders.py: jsonschema compared the two errors' paths ("raw" against 1.0)
    # and raised a TypeError out of the loader
    error = load_error(tmp_path, HEAD + f"budget: {{tokens: 5}}\nutility: {{retention: {mapping}}}\n")
    assert error.line == 5 and error.path.startswith("utility.retention")
    assert "\n" not in error.render()


def test_records_with_number_keys_are_invalid_records_not_a_crash(tmp_path: Path) -> None:
    path = write(tmp_path, "r.yaml", "- {id: a, timestamp: 0, tokens: x, 7: y}\n- {id: b, timestamp: 0, tokens: 1}\n")
    loaded = memsolve.load_records(path)
    assert [type(r).__name__ for r in loaded.records] == ["InvalidRecord", "Record"]
    assert loaded.records[0].error.line == 1
