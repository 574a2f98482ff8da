"""Fixtures for the workbench: the opened incidents policy, the API client, and (for the page
tests) one server started by the CLI and one headless Chromium for the whole session."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..conftest import ROOT, needs

POLICY = "policies/incidents.yaml"
Q = "database timeout after deploy"
LABELLED = "examples/incidents/labelled.yaml"
HAS_EXTRA = all(importlib.util.find_spec(m) is not None for m in ("starlette", "uvicorn", "ruamel.yaml", "httpx"))
CHROMIUM = "/usr/bin/chromium"
HAS_BROWSER = HAS_EXTRA and Path(CHROMIUM).exists() and importlib.util.find_spec("playwright") is not None
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run"]

extra = needs(HAS_EXTRA, "the workbench extra (starlette, uvicorn, ruamel.yaml, httpx)")
browser_needed = needs(HAS_BROWSER, f"playwright and Debian's chromium at {CHROMIUM}")


@pytest.fixture
def bench() -> Any:
    from memsolve.workbench.bench import open_bench

    return open_bench(POLICY)


@pytest.fixture
def client(bench: Any) -> Iterator[Any]:
    from starlette.testclient import TestClient

    from memsolve.workbench.app import create_app

    with TestClient(create_app(bench)) as test_client:
        yield test_client


@pytest.fixture(scope="session")
def server() -> Iterator[str]:
    """``memsolve workbench`` on a free loopback port (``--port 0``); yields its address."""
    proc = subprocess.Popen([sys.executable, "-m", "memsolve", "workbench", "--policy", POLICY, "--labelled", LABELLED,
                             "--port", "0"],
                            cwd=ROOT, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    drain = None
    try:
        seen, match = [], None
        for line in proc.stderr or ():  # the address line, after any warning the interpreter prints
            seen.append(line)
            match = re.search(r"http://127\.0\.0\.1:\d+/", line)
            if match:
                break
        assert match, f"no address from memsolve workbench: {''.join(seen)!r}"
        # keep reading its stderr so that a chatty server never blocks on a full pipe
        drain = threading.Thread(target=lambda: [None for _ in proc.stderr or ()], daemon=True)
        drain.start()
        yield match.group(0)
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        if drain is not None:
            drain.join(timeout=20)  # it ends at the pipe's end, before the pipe is closed
        if proc.stderr:
            proc.stderr.close()


@pytest.fixture(scope="package")  # the sync API runs an event loop: stopped before other tests run
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any, server: str) -> Iterator[Any]:
    """A fresh browser context (its own storage) on the workbench, loaded and ready."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(str(error)))
    tab.goto(server)
    tab.wait_for_selector("body[data-ready=true]")
    yield tab
    context.close()
    assert not errors, errors  # the page never throws, whatever the input
