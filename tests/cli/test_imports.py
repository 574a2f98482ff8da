"""Imports on demand: ``import memsolve``, ``memsolve --version`` and ``memsolve --help`` import no
command module and nothing heavy; OR-Tools only when CP-SAT runs, rich only when a table is drawn,
matplotlib only for a plot. Each case runs in a fresh interpreter and reads its ``sys.modules``;
and the lazily loaded commands are the same commands, listed the same way."""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import click
import pytest

import memsolve
from memsolve import cli as cli_package
from memsolve.cli import main

from ..conftest import ROOT, needs, write

HEAVY = ("ortools", "rich", "matplotlib")
PIPELINE = ("numpy", "jsonschema", "yaml", "memsolve.pipeline", "memsolve.solver", "memsolve.records",
            "memsolve.cli.common", "memsolve.cli.solving", "memsolve.cli.ci", "memsolve.cli.rounds")

# runs `memsolve ARGS` in this interpreter and writes the exit code and sys.modules to REPORT
_RUN = """
import json, sys
import click
from memsolve.cli import main
args, report, preload = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3] == "preload"
if preload:  # every command loaded before the run: what the eager CLI did
    for name in main.list_commands(click.Context(main)):
        main.get_command(click.Context(main), name)
try:
    main(args, prog_name="memsolve")
except SystemExit as exit:
    code = exit.code
with open(report, "w") as f:
    json.dump({"code": code, "modules": sorted(sys.modules)}, f)
"""


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MEMSOLVE_KERNEL", "COLUMNS")}
    return {**env, "COLUMNS": "80", **extra}


def _memsolve(tmp_path: Path, *args: str, preload: bool = False,
              **env: str) -> tuple[dict, subprocess.CompletedProcess]:
    report = tmp_path / "report.json"
    report.unlink(missing_ok=True)  # a run that writes none must not read the last one's
    proc = subprocess.run([sys.executable, "-c", _RUN, json.dumps([str(a) for a in args]), str(report),
                           "preload" if preload else "cold"], capture_output=True, text=True, cwd=ROOT,
                          env=_env(**env), timeout=300)
    assert report.exists(), proc.stderr
    return json.loads(report.read_text()), proc


def _loaded(modules: list[str], names: tuple[str, ...]) -> set[str]:
    return {name for name in names if name in modules}


def _dp(tmp_path: Path) -> tuple[str, ...]:
    """The inputs of a solve on the DP with no cross-check (which would run CP-SAT)."""
    policy = write(tmp_path, "dp.yaml", "apiVersion: memsolve/v1\nkind: MemoryPolicy\nmetadata: {name: lazy}\n"
                   "budget: {tokens: 10}\nsolver: {engine: dp, cross_check: none}\n")
    records = write(tmp_path, "records.json", [{"id": f"r{i}", "tokens": 2 + i, "utility": 1.0 + i, "timestamp": 0}
                                               for i in range(6)])
    return ("--policy", str(policy), "--records", str(records), "--now", "1")


# --- what each run imports -----------------------------------------------------------------


def test_import_memsolve_is_cheap() -> None:
    code = "import json, sys, memsolve; print(json.dumps(sorted(sys.modules)))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(), check=True)
    modules = json.loads(proc.stdout)
    assert _loaded(modules, (*HEAVY, "click", *PIPELINE)) == set()


def test_every_exported_name_still_works() -> None:
    namespace: dict = {}
    exec("from memsolve import *", namespace)
    assert {name for name in namespace if not name.startswith("__")} == set(memsolve.__all__)
    for name in memsolve.__all__:
        value = getattr(memsolve, name)
        assert value.__name__ == name and value.__module__.startswith("memsolve."), name
    assert set(memsolve.__all__) <= set(dir(memsolve))
    assert memsolve.solver.solve_arrays is memsolve.solve_arrays  # subpackages as attributes, as before
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        memsolve.no_such_name  # noqa: B018
    assert not hasattr(memsolve, "_no_such_name")


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["-h"], []])
def test_version_and_help_import_no_command(tmp_path: Path, args: list[str]) -> None:
    run, proc = _memsolve(tmp_path, *args)
    assert run["code"] in (0, 2) and proc.stdout + proc.stderr, proc.stderr  # `memsolve` alone: the help
    assert _loaded(run["modules"], (*HEAVY, *PIPELINE)) == set()


# what a solve without state, relevance or a cache block never needs
ON_DEMAND = ("sqlite3", "memsolve.rounds.state", "memsolve.relevance", "memsolve.cache", "memsolve.solver.cache",
             "importlib.resources", "tempfile", "difflib")


def test_a_json_solve_with_the_dp_imports_no_ortools_rich_or_matplotlib(tmp_path: Path) -> None:
    run, proc = _memsolve(tmp_path, *_dp(tmp_path), "--format", "json")  # the default command
    assert run["code"] == 0, proc.stderr
    assert json.loads(proc.stdout)["solver"]["engine"] == "dp"
    assert _loaded(run["modules"], HEAVY) == set()
    assert _loaded(run["modules"], ON_DEMAND) == set()


def test_state_relevance_and_a_cache_block_import_what_they_use(tmp_path: Path) -> None:
    policy = write(tmp_path, "all.yaml", "apiVersion: memsolve/v1\nkind: MemoryPolicy\nmetadata: {name: all}\n"
                   "budget: {tokens: 10}\nsolver: {engine: dp, cross_check: none}\n"
                   "rules:\n  - relevance: {scorer: bm25}\n"
                   "cache: {provider: anthropic-5m, input_price: 3, value_per_dollar: 1000, min_prefix: 0}\n")
    records = write(tmp_path, "records.json", [{"id": f"r{i}", "tokens": 2 + i, "utility": 1.0 + i, "timestamp": 0,
                                                "text": f"note {i}"} for i in range(6)])
    run, proc = _memsolve(tmp_path, "--policy", policy, "--records", records, "--now", "1", "--query", "note",
                          "--state", tmp_path / "state.db", "--agent", "a", "--format", "json")
    assert run["code"] == 0, proc.stderr
    assert _loaded(run["modules"], ON_DEMAND) >= {"sqlite3", "memsolve.rounds.state", "memsolve.relevance",
                                                  "memsolve.cache", "memsolve.solver.cache"}


def test_a_table_imports_rich_and_only_rich(tmp_path: Path) -> None:
    run, proc = _memsolve(tmp_path, "solve", *_dp(tmp_path))
    assert run["code"] == 0, proc.stderr
    assert _loaded(run["modules"], HEAVY) == {"rich"}


def test_cp_sat_imports_ortools(tmp_path: Path) -> None:
    run, proc = _memsolve(tmp_path, "solve", *_dp(tmp_path), "--engine", "cp-sat", "--format", "json")
    assert run["code"] == 0, proc.stderr
    assert json.loads(proc.stdout)["solver"]["engine"] == "cp-sat"
    assert _loaded(run["modules"], HEAVY) == {"ortools"}


@needs(importlib.util.find_spec("matplotlib") is not None, "matplotlib")
def test_matplotlib_only_for_a_plot(tmp_path: Path) -> None:
    frontier = ("frontier", *_dp(tmp_path), "--format", "json")
    run, proc = _memsolve(tmp_path, *frontier)
    assert run["code"] == 0, proc.stderr
    assert _loaded(run["modules"], HEAVY) == set()
    run, proc = _memsolve(tmp_path, *frontier, "--plot", tmp_path / "f.svg")
    assert run["code"] == 0, proc.stderr
    assert "matplotlib" in run["modules"] and (tmp_path / "f.svg").exists()


# --- the same commands, listed the same way ------------------------------------------------


def test_version_names_the_kernel_as_the_solver_does() -> None:
    describe = "from memsolve.solver import native; print(native.describe())"
    for env in ({}, {"MEMSOLVE_KERNEL": "numpy"}, {"MEMSOLVE_KERNEL": "NumPy"}):
        kernel = subprocess.run([sys.executable, "-c", describe], capture_output=True, text=True, env=_env(**env),
                                check=True).stdout.strip()
        proc = subprocess.run([sys.executable, "-m", "memsolve", "--version"], capture_output=True, text=True,
                              env=_env(**env), check=True)
        assert proc.stdout == f"memsolve {version('memsolve')} ({kernel})\n", env


def test_version_when_the_solver_is_imported_already(cli) -> None:
    from memsolve.solver import native

    assert cli("--version").stdout == f"memsolve {version('memsolve')} ({native.describe()})\n"


def test_the_commands_are_those_of_the_modules() -> None:
    table = {name: cli_package._COMMANDS[name] for name in main.list_commands(click.Context(main))}
    modules = {module: importlib.import_module(f"memsolve.cli.{module}") for module, _, _ in table.values()}
    assert {command.name: command for group in modules.values() for command in group.COMMANDS} == {
        name: getattr(modules[module], attribute) for name, (module, attribute, _) in table.items()}
    for name, (module, attribute, summary) in table.items():
        command = main.get_command(click.Context(main), name)
        assert command is getattr(modules[module], attribute)
        # the listing shows the first paragraph of the command's help: keep the table in
        # src/memsolve/cli/__init__.py in step with the command's docstring
        assert summary == " ".join(inspect.cleandoc(command.help).partition("\n\n")[0].split()), name
        stand_in = click.Command(name, help=summary)
        for limit in range(10, 130, 7):
            assert stand_in.get_short_help_str(limit) == command.get_short_help_str(limit), (name, limit)


@pytest.mark.parametrize("args", [["--help"], [], ["solv"], ["stat"], ["nonsense"], ["state", "sho"],
                                  ["--bogus"]])
def test_cold_and_loaded_say_the_same(tmp_path: Path, args: list[str]) -> None:
    """What the command line prints with no command loaded equals what it prints with all of them
    loaded (as the eager command line had them): the help, and the "Did you mean" of a typo."""
    cold, cold_proc = _memsolve(tmp_path, *args)
    loaded, loaded_proc = _memsolve(tmp_path, *args, preload=True)
    assert (cold["code"], cold_proc.stdout, cold_proc.stderr) == (loaded["code"], loaded_proc.stdout,
                                                                 loaded_proc.stderr)
    assert cold_proc.stdout or cold_proc.stderr


def test_a_typo_suggests_the_command(tmp_path: Path) -> None:
    run, proc = _memsolve(tmp_path, "solv")
    assert run["code"] == 2 and proc.stderr.startswith("error: No such command 'solv'.")
    if hasattr(click.exceptions, "NoSuchCommand"):  # click >= 8.4 suggests
        assert proc.stderr == "error: No such command 'solv'. Did you mean 'solve'?\n"
    assert "memsolve.cli.solving" not in run["modules"]


def _listed(help_text: str) -> list[str]:
    lines = help_text.split("Commands:\n", 1)[1].splitlines()
    return [line.split()[0] for line in lines if line.startswith("  ") and not line.startswith("   ")]


def test_every_listed_command_resolves(cli) -> None:
    listed = _listed(cli("--help").stdout)
    assert listed == sorted(cli_package._COMMANDS) and "test" in listed
    for name in listed:
        result = cli(name, "--help")
        assert result.exit_code == 0 and result.stdout.startswith("Usage: "), name
        assert f" {name} " in result.stdout.splitlines()[0], name
    for name in _listed(cli("state", "--help").stdout):
        assert cli("state", name, "--help").exit_code == 0, name


def test_each_command_module_loads_in_a_fresh_process(tmp_path: Path) -> None:
    """The first command of each module, from cold: a module that only imports after another
    (an import cycle, say) fails here; the test above has them all loaded."""
    firsts = {module: name for name, (module, _, _) in reversed(cli_package._COMMANDS.items())}
    assert {"ci", "rounds", "solving"} <= set(firsts)
    every = tuple(f"memsolve.cli.{module}" for module in firsts)
    for module, name in firsts.items():
        run, out = _memsolve(tmp_path, name, "--help")
        assert run["code"] == 0 and out.stdout.startswith(f"Usage: memsolve {name} "), (name, out.stderr)
        assert _loaded(run["modules"], every) == {f"memsolve.cli.{module}"}
