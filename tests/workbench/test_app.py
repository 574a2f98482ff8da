"""The JSON API (starlette's TestClient): the seed's experiment through /api/run, each step
checked against the CLI with the same edits as --set; errors are the CLI's own line; "save as
policy" runs through `memsolve --policy` to the page's result; other tenants stay counted."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from ..conftest import ROOT
from .conftest import POLICY, Q, extra

pytestmark = extra

START = {"tenant": "team-a", "query": Q}
RECENT = {"recency_weight": "1"}
EPISODIC = {"stores": "episodic"}


def run(client: Any, text: str, **edits: Any) -> dict[str, Any]:
    response = client.post("/api/run", json={"yaml": text, "edits": edits})
    assert response.status_code == 200, response.text
    return response.json()


def walk(client: Any, *steps: dict[str, Any]) -> dict[str, Any]:
    """Start from the policy file and apply each step's edits in turn, as the page does."""
    data = {"yaml": (ROOT / POLICY).read_text(encoding="utf-8")}
    for step in steps:
        data = run(client, data["yaml"], **step)
    return data


def tray(data: dict[str, Any]) -> list[str]:
    assert "error" not in data, data["error"]
    return [s["id"] for s in data["result"]["selected"]]


def rows(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["id"]: row for row in data["view"]["rows"]}


def cli_json(cli: Any, *args: str) -> dict[str, Any]:
    result = cli("--policy", POLICY, "--query", Q, "--format", "json", *args)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_start_serves_the_policy_its_knobs_and_first_run(client: Any) -> None:
    data = client.get("/api/start").json()
    assert data["yaml"] == data["original"] == (ROOT / POLICY).read_text(encoding="utf-8")
    assert [c["name"] for c in data["controls"]][:9] == [
        "query", "tenant", "stores", "include_previous", "max_age", "latest_key", "budget", "max_records",
        "recency_weight"]
    assert {"engine", "fidelity", "price_c", "price_q0"} <= {c["name"] for c in data["controls"]}
    assert data["policy_file"] == POLICY and data["questions"] == []
    assert data["error"]["field"] == "query"
    # the bundled policy names no query, and relevance needs one: the CLI's own error until one is typed
    assert data["error"]["message"] == (
        "error: policies/../examples/incidents/records.json:5:5: records[0]: no utility given; deriving it "
        "from relevance needs a query (--query)")


# the seed's walk-through: (the page's edits, the CLI's flags, the tray)
WALK = [
    ([START], ["--tenant", "team-a"], ["M3"]),
    ([START, RECENT], ["--tenant", "team-a", "--set", "rules.relevance.recency_weight=1"], ["M5"]),
    ([START, RECENT, EPISODIC], ["--tenant", "team-a", "--set", "rules.relevance.recency_weight=1",
                                 "--set", "rules.stores.allow=[episodic]"], ["M3"]),
    ([START, RECENT, EPISODIC, {"max_age": "48"}], ["--tenant", "team-a", "--set", "rules.relevance.recency_weight=1",
                                                    "--set", "rules.stores.allow=[episodic]",
                                                    "--set", "rules.max_age=48"], ["M3"]),
    ([START, RECENT, EPISODIC, {"max_age": "47"}], ["--tenant", "team-a", "--set", "rules.relevance.recency_weight=1",
                                                    "--set", "rules.stores.allow=[episodic]",
                                                    "--set", "rules.max_age=47"], []),
    ([START, RECENT, EPISODIC, {"budget": "10"}], ["--tenant", "team-a", "--set", "rules.relevance.recency_weight=1",
                                                   "--set", "rules.stores.allow=[episodic]",
                                                   "--set", "budget.tokens=10"], ["M3"]),
    ([START, RECENT, EPISODIC, {"budget": "9"}], ["--tenant", "team-a", "--set", "rules.relevance.recency_weight=1",
                                                  "--set", "rules.stores.allow=[episodic]",
                                                  "--set", "budget.tokens=9"], []),
    ([START, RECENT, EPISODIC, {"include_previous": False}],
     ["--tenant", "team-a", "--set", "rules.relevance.recency_weight=1", "--set", "rules.stores.allow=[episodic]",
      "--set", "rules.sessions.include_previous=false"], []),
    ([START, RECENT, EPISODIC, {"tenant": "team-b"}],
     ["--tenant", "team-b", "--set", "rules.relevance.recency_weight=1", "--set", "rules.stores.allow=[episodic]"],
     ["M7"]),
]


@pytest.mark.parametrize(("steps", "flags", "expected"), WALK)
def test_the_seeds_walkthrough_matches_the_cli(client: Any, cli: Any, steps: list[dict[str, Any]],
                                               flags: list[str], expected: list[str]) -> None:
    page = walk(client, *steps)
    assert tray(page) == expected
    reference = cli_json(cli, *flags)
    for key in ("selected", "dropped", "excluded", "trace", "objective", "tokens_used", "other_tenants", "solver"):
        assert page["result"][key] == reference[key], key


def test_rows_carry_text_similarity_score_outcome_rule_and_reason(client: Any) -> None:
    data = walk(client, START, RECENT)
    table = rows(data)
    assert table["M3"]["text"] == "Database timeout after deploy ended after reducing the batch size."
    assert table["M3"]["similarity"] == pytest.approx(0.5066, abs=1e-4)
    assert table["M5"]["score"] == pytest.approx(0.9971, abs=1e-4) and table["M5"]["outcome"] == "selected"
    assert (table["M8"]["rule"], table["M8"]["reason"], table["M8"]["stage"]) == (
        "relevance", "shares no term with the query", "ranking")  # newest episode, no shared term
    assert (table["M9"]["rule"], table["M9"]["stage"]) == ("max-age", "scope")
    assert table["M3"]["stage"] == "packing" and "count limit" in table["M3"]["reason"]
    assert data["view"]["ranked"][:2] == ["M5", "M3"]


def test_an_empty_tray_is_explained(client: Any) -> None:
    data = walk(client, START, RECENT, EPISODIC, {"max_age": "47"})
    assert tray(data) == []
    assert "scope filters excluded" in data["view"]["empty"][0] and "by max-age" in data["view"]["empty"][0]
    data = walk(client, START, RECENT, EPISODIC, {"budget": "9"})
    assert any(line.startswith("M3 reached packing and was dropped: ") for line in data["view"]["empty"])


def test_exact_and_greedy_side_by_side_and_the_frontier(client: Any, cli: Any) -> None:
    data = walk(client, START, {"max_records": "3", "budget": "25"})
    reference = json.loads(cli("compare", "--policy", POLICY, "--tenant", "team-a", "--query", Q,
                               "--set", "budget.max_records=3", "--set", "budget.tokens=25", "--format",
                               "json").stdout)
    assert data["compare"] == reference
    frontier = json.loads(cli("frontier", "--policy", POLICY, "--tenant", "team-a", "--query", Q,
                              "--set", "budget.max_records=3", "--set", "budget.tokens=25", "--format",
                              "json").stdout)
    assert data["frontier"] == frontier["frontier"]
    greedy = walk(client, START, {"engine": "greedy"})
    assert greedy["result"]["solver"]["engine"] == "greedy" and greedy["compare"]["exact"]["objective"] >= 0


def test_other_tenants_are_counted_never_shown(client: Any) -> None:
    data = walk(client, START, {"tenant": "team-b"})
    text = json.dumps(data)
    for secret in ("M3", "M5", "M10", "batch size", "PostgreSQL", "s-old", "db.statement-timeout"):
        assert secret not in text, secret
    assert data["view"]["other_tenants"] == data["result"]["other_tenants"] == 9
    assert [row["id"] for row in data["view"]["rows"]] == ["M7"]


def _cli_error(cli: Any, *args: str) -> str:
    result = cli("--policy", POLICY, *args)
    assert result.exit_code == 2
    return result.stderr.strip()


@pytest.mark.parametrize(("field", "value", "flag"), [
    ("budget", "-1", "budget.tokens=-1"),
    ("stores", "episodic, nowhere", "rules.stores.allow=[episodic, nowhere]"),
    ("recency_weight", "2", "rules.relevance.recency_weight=2"),
    ("max_records", "many", "budget.max_records=many"),
])
def test_a_bad_field_gives_the_clis_line_next_to_the_field(client: Any, cli: Any, field: str, value: str,
                                                           flag: str) -> None:
    data = walk(client, {field: value})
    assert data["error"]["message"] == _cli_error(cli, "--set", flag)
    assert data["error"]["field"] == field and data["error"]["exit_code"] == 2
    assert data["knobs"][field] == value and "result" not in data
    again = run(client, data["yaml"], query=Q, **{field: {"budget": "80", "stores": "episodic", "recency_weight": "0",
                                                 "max_records": "1"}[field]})
    assert "error" not in again  # the page recovers with the next good value


def test_a_yaml_error_has_its_line_and_column_from_the_loader(client: Any, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from memsolve.cli import main

    text = (ROOT / POLICY).read_text(encoding="utf-8").replace("budget: {tokens: 80", "budget: {tokens: [80")
    data = run(client, text)
    (tmp_path / "incidents.yaml").write_text(text, encoding="utf-8")
    validate = CliRunner().invoke(main, ["validate", str(tmp_path / "incidents.yaml")])
    assert validate.exit_code == 2
    assert data["error"]["message"] == validate.stderr.strip().replace(str(tmp_path / "incidents.yaml"), POLICY)
    assert re.match(r"error: policies/incidents\.yaml:\d+:\d+: ", data["error"]["message"])
    assert data["error"]["line"] >= 10 and data["knobs"] is None and data["yaml"] == text
    typed = run(client, text.replace("budget:", "budget:\n oops"))  # a syntax error with a knob edit after it
    assert typed["error"]["line"] is not None


def test_deeply_nested_yaml_is_the_clis_one_line_for_run_and_save(client: Any, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from memsolve.cli import main

    # deep enough that ruamel.yaml's recursive composer fails (RecursionError, a 500 before the fix)
    text = (ROOT / POLICY).read_text(encoding="utf-8") + "deep: " + "[" * 400 + "]" * 400 + "\n"
    (tmp_path / "incidents.yaml").write_text(text, encoding="utf-8")
    validate = CliRunner().invoke(main, ["validate", str(tmp_path / "incidents.yaml")])
    assert validate.exit_code == 2
    line = validate.stderr.strip().replace(str(tmp_path / "incidents.yaml"), POLICY)
    assert "nesting" in line
    for edits in ({}, {"budget": "5"}):
        data = run(client, text, **edits)
        assert data["error"]["message"] == line and data["yaml"] == text and data["knobs"] is None
    saved = client.post("/api/save", json={"yaml": text})
    assert saved.status_code == 422 and saved.json()["error"]["message"] == line
    assert tray(walk(client, START)) == ["M3"]  # the app still answers


def test_save_as_policy_runs_through_the_cli_to_the_same_result(client: Any, cli: Any, tmp_path: Path) -> None:
    data = walk(client, START, RECENT, EPISODIC, {"max_age": "48", "latest_key": False})
    response = client.post("/api/save", json={"yaml": data["yaml"]})
    assert response.status_code == 200
    assert response.headers["content-disposition"] == 'attachment; filename="incidents-workbench.yaml"'
    saved = tmp_path / "saved.yaml"
    saved.write_bytes(response.content)
    result = cli("--policy", str(saved), "--format", "json")  # no flags: the file holds the knobs
    assert result.exit_code == 0, result.stderr
    reference = json.loads(result.stdout)
    page = data["result"]
    assert {k: v for k, v in reference.items() if k != "policy"} == {k: v for k, v in page.items() if k != "policy"}
    sha = reference["policy"]["sha256"]
    assert result.stdout == data["result_json"].replace(page["policy"]["sha256"], sha)  # the CLI's very bytes
    assert tray(data) == ["M3"]


def test_save_refuses_an_invalid_policy_with_its_line(client: Any) -> None:
    data = walk(client, {"budget": "-1"})
    response = client.post("/api/save", json={"yaml": data["yaml"]})
    assert response.status_code == 422
    assert response.json()["error"]["message"] == data["error"]["message"]


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"content": "yaml=1", "headers": {"content-type": "application/x-www-form-urlencoded"}},
     "error: the API takes application/json"),
    ({"content": "{", "headers": {"content-type": "application/json"}}, "error: the request body is not JSON"),
    ({"json": {"edits": {}}}, "error: the request needs `yaml`, the policy text"),
    ({"json": {"yaml": "", "edits": []}}, "error: `edits` must be an object of knob fields"),
])
def test_bad_requests_are_one_line(client: Any, kwargs: dict[str, Any], message: str) -> None:
    response = client.post("/api/run", **kwargs)
    assert response.status_code == 400 and response.json()["error"]["message"] == message


def test_unknown_knob_and_foreign_host(client: Any) -> None:
    data = walk(client, {"colour": "red"})
    assert data["error"]["message"] == "error: unknown knob `colour`" and data["error"]["field"] == "colour"
    assert client.get("/", headers={"host": "attacker.example"}).status_code == 400


@pytest.mark.parametrize("wildcard", ["0.0.0.0", "::"])
def test_a_wildcard_bind_answers_to_the_machines_names_and_addresses_only(bench: Any, wildcard: str) -> None:
    import socket

    from starlette.testclient import TestClient

    from memsolve.workbench.app import create_app

    names = {socket.gethostname(), socket.getfqdn()}
    addresses = {info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None)}
    with TestClient(create_app(bench, wildcard)) as client:
        for name in sorted(names | addresses):  # what a browser on the network sends as Host
            shown = f"[{name}]" if ":" in name else name
            assert client.get("/", headers={"host": f"{shown}:8765"}).status_code == 200, name
        assert client.get("/", headers={"host": "attacker.example:8765"}).status_code == 400


def test_allow_host_adds_a_name_and_only_that_name(bench: Any) -> None:
    from starlette.testclient import TestClient

    from memsolve.workbench.app import create_app

    with TestClient(create_app(bench, "127.0.0.1", ["WB.example"])) as client:
        assert client.get("/", headers={"host": "wb.example:8765"}).status_code == 200
        assert client.get("/", headers={"host": "other.example:8765"}).status_code == 400
        assert client.get("/", headers={"host": "[::1]:8765"}).status_code == 200


def test_every_asset_is_in_the_package_and_nothing_is_fetched_from_elsewhere(client: Any) -> None:
    from memsolve.workbench.app import STATIC

    html = client.get("/").text
    linked = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert linked and all(url.startswith("/static/") for url in linked)
    for url in linked:
        assert client.get(url).status_code == 200, url
    for asset in STATIC.iterdir():
        text = asset.read_text(encoding="utf-8")
        urls = set(re.findall(r"https?://[^\s\"')`]+", text)) - {"http://www.w3.org/2000/svg"}
        assert not urls, (asset.name, urls)  # no CDN, no font service: the page works offline


def test_the_supporting_fact_counter_counts_labelled_ids_for_exact_and_greedy(cli: Any) -> None:
    from starlette.testclient import TestClient

    from memsolve.workbench.app import create_app
    from memsolve.workbench.bench import open_bench

    bench = open_bench(POLICY, labelled_path="examples/incidents/labelled.yaml")
    with TestClient(create_app(bench)) as client:
        data = walk(client, START)
        assert data["supporting"] == {"labelled": True, "file": "labelled.yaml", "total": 1, "in_view": ["M3"],
                                      "outside_view": 0, "covered": {"exact": ["M3"], "greedy": ["M3"]}}
        assert walk(client, START, RECENT)["supporting"]["covered"] == {"exact": [], "greedy": []}
        other = walk(client, {"tenant": "team-a", "query": "billing timeout fix"})
        assert other["supporting"]["in_view"] == [] and other["supporting"]["outside_view"] == 1
        assert "M7" not in json.dumps(other)  # team-b's labelled record is counted, not named
        assert walk(client, {**START, "query": "anything else"})["supporting"] == {"labelled": False,
                                                                                  "file": "labelled.yaml"}
        assert client.get("/api/start").json()["questions"][0] == "billing timeout fix"
    assert walk(TestClient(create_app(open_bench(POLICY))), START)["supporting"] is None


@pytest.mark.parametrize(("text", "message"), [
    ("kind: Other\n", "labelled.yaml:1:7: kind: a labelled set is a mapping with `kind: LabelledQueries`"),
    ("kind: LabelledQueries\nqueries:\n  - {query: q, relevant: M3}\n",
     "labelled.yaml:3:26: queries[0].relevant: expected a list of record ids"),
])
def test_a_bad_labelled_set_is_one_line_at_its_place(tmp_path: Path, text: str, message: str) -> None:
    from memsolve.errors import InputError
    from memsolve.workbench.labelled import load_labelled

    (tmp_path / "labelled.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as error:
        load_labelled(tmp_path / "labelled.yaml")
    assert error.value.render() == f"{tmp_path}/{message}"


def test_a_record_at_a_lower_level_keeps_its_full_text_in_the_table() -> None:
    from starlette.testclient import TestClient

    from memsolve.workbench.app import create_app
    from memsolve.workbench.bench import open_bench

    with TestClient(create_app(open_bench("policies/team-a.yaml"))) as client:
        data = client.get("/api/start").json()
    row = rows(data)["a-db-arch"]
    chosen = next(s for s in data["result"]["selected"] if s["id"] == "a-db-arch")
    assert row["level"] == chosen["level"] == "summary" and row["chosen_text"] == chosen["text"]
    assert row["text"].startswith("Orders service stores orders in PostgreSQL 16 with logical replication")
    assert data["view"]["other_tenants"] == data["result"]["other_tenants"] > 0
    shared = json.loads((ROOT / "examples/shared.json").read_text(encoding="utf-8"))["records"]
    text = json.dumps(data)
    for record in shared:
        if record.get("tenant") != "team-a":  # team-b's and the untenanted: counted, never named
            assert f'"{record["id"]}"' not in text and record["text"][:30] not in text, record["id"]
