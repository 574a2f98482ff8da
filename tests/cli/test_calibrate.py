"""``memsolve calibrate``: the fitted policy, its provenance, the recall table, determinism, and
bad labelled files as one located line."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import memsolve
from memsolve.calibrate import load_labelled

from ..conftest import ROOT

DATA = ROOT / "tests" / "data" / "labelled"
POLICY = DATA / "policy.yaml"
FILES = ("--labelled", DATA / "alpha.labelled.yaml", "--labelled", DATA / "beta.labelled.yaml")


def recall_rows(output: str) -> dict[str, tuple[float, float]]:
    rows = {}
    for line in output.splitlines():
        if line.startswith(("before", "after")):
            *name, exact, greedy = line.split()
            rows[" ".join(name)] = (float(exact), float(greedy))
    return rows


def test_calibrate_writes_the_policy_with_a_fitted_model(cli, tmp_path: Path) -> None:
    out = tmp_path / "calibrated.yaml"
    done = cli("calibrate", "--policy", POLICY, *FILES, "--out", out)
    assert done.exit_code == 0, done.output
    written = yaml.safe_load(out.read_text())
    model = written["utility"]["model"]
    assert written["utility"]["from"] == "relevance"
    # every feature but `external` (no record has a score) and `bm25` (the rule's scorer: `score`)
    assert model["features"] == ["score", "gap", "log_rank", "log_tokens", "log_age", "tfidf", "matched", "neighbour"]
    assert model["fitted"]["queries"] == 24 and model["fitted"]["files"] == ["alpha.labelled.yaml",
                                                                             "beta.labelled.yaml"]
    assert len(model["fitted"]["labelled_sha256"]) == 64
    # the synthetic answers are long, their near misses short: length must come out positive
    assert model["coef"][model["features"].index("log_tokens")] > 0
    rows = recall_rows(done.output)
    assert set(rows) == {"before (labelled set)", "after (labelled set)", "after (held out, k-fold)"}
    assert rows["after (labelled set)"][0] > rows["before (labelled set)"][0]
    assert rows["after (held out, k-fold)"][0] > rows["before (labelled set)"][0]
    # the written policy is a valid policy that selects with its model
    policy = memsolve.load_policy(out)
    assert policy.utility.model is not None and policy.utility.model.coef == tuple(model["coef"])


def test_calibrate_is_deterministic_to_the_byte(cli, tmp_path: Path) -> None:
    outputs = []
    for name in ("one.yaml", "two.yaml"):
        assert cli("calibrate", "--policy", POLICY, *FILES, "--out", tmp_path / name).exit_code == 0
        outputs.append((tmp_path / name).read_bytes())
    assert outputs[0] == outputs[1]


def test_one_file_has_no_held_out_share(cli, tmp_path: Path) -> None:
    one = DATA / "alpha.labelled.yaml"
    done = cli("calibrate", "--policy", POLICY, "--labelled", one, "--out", tmp_path / "p.yaml")
    assert done.exit_code == 0, done.output
    assert "held out: needs two or more labelled files" in done.output


@pytest.mark.parametrize(("name", "where", "message"), [
    ("bad-missing-relevant.yaml", ":5:5: queries[1]", "`relevant` is required"),
    ("bad-kind.yaml", ":1:7: kind", "expected `kind: LabelledQueries`"),
    ("bad-records.yaml", ":2:10: records", "no records file at"),
])
def test_a_bad_labelled_file_is_one_located_line(cli, tmp_path: Path, name: str, where: str, message: str) -> None:
    done = cli("calibrate", "--policy", POLICY, "--labelled", DATA / name, "--out", tmp_path / "p.yaml")
    assert done.exit_code == 2
    lines = done.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and where in lines[0] and message in lines[0]
    assert not (tmp_path / "p.yaml").exists()


def test_a_policy_without_a_relevance_rule_is_refused(cli, tmp_path: Path) -> None:
    policy = tmp_path / "p.yaml"
    policy.write_text(POLICY.read_text().replace("rules:\n  - relevance: {scorer: bm25}\n", ""))
    done = cli("calibrate", "--policy", policy, *FILES, "--out", tmp_path / "out.yaml")
    assert done.exit_code == 2 and "needs a `relevance` rule" in done.output


def test_an_existing_out_needs_force(cli, tmp_path: Path) -> None:
    out = tmp_path / "p.yaml"
    out.write_text("keep me")
    done = cli("calibrate", "--policy", POLICY, *FILES, "--out", out)
    assert done.exit_code == 2 and "--force" in done.output and out.read_text() == "keep me"


def test_labelled_queries_read_their_records_relative_to_the_file() -> None:
    found = load_labelled(DATA / "alpha.labelled.yaml")
    assert len(found.queries) == 12 and len(found.records.records) == 48
    assert found.queries[0].relevant == ("alpha-database",)


def test_a_record_that_covers_a_relevant_id_counts_for_it() -> None:
    from memsolve.calibrate import LabelledQuery, LabelledSet, examples, recall

    records = memsolve.load_records([
        {"id": "t1", "timestamp": 1, "text": "yes, finally, last night"},
        {"id": "fact", "timestamp": 1, "text": "the database timeout was fixed", "covers": ["t1"]},
        {"id": "t2", "timestamp": 2, "text": "the database is slow again today, who knows why"},
    ])
    query = LabelledQuery("database timeout", ("t1",), now=5)
    labelled = LabelledSet("inline", records, (query,), "-")
    policy = memsolve.load_policy(POLICY)
    assert recall(policy, labelled, "exact") == [1.0]  # 14 words: the fact (5) and t2 (10) do not both fit
    x, y = examples(policy, labelled)
    assert y.tolist() == [1.0, 0.0]  # the fact covers t1; t2 covers nothing (t1 shares no term: excluded)


def test_a_level_that_covers_an_id_counts_for_it_only_when_chosen() -> None:
    from memsolve.calibrate import covered

    records = memsolve.load_records([{"id": "t1", "timestamp": 1, "text": "raw words", "covers": ["x"],
                                      "representations": {"raw": {}, "summary": {"text": "a fact", "covers": ["t2"]}}}])
    record = records.records[0]
    assert covered(record, "raw") == {"t1", "x"}
    assert covered(record, "summary") == {"t1", "x", "t2"}
