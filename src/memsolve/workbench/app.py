"""The workbench's web app: static assets and a small JSON API over :mod:`.bench`.

Routes (all on the machine's loopback by default; the page needs nothing from the network):

- ``GET /`` the page; ``GET /static/...`` its script and style, shipped in the package;
- ``GET /api/start`` the knobs' descriptions, the policy as opened and its first run;
- ``POST /api/run`` ``{"yaml": TEXT, "edits": {KNOB: FIELD}}`` → :func:`.bench.evaluate`;
- ``POST /api/save`` ``{"yaml": TEXT}`` → the policy file ("save as policy"), as a download.

The app is a thin layer: every number and every outcome comes from the same pipeline as the
CLI; a bad input is answered with the CLI's own one line (status 200 with ``error`` for a run,
the page shows it next to the field; 422 for a save).
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..errors import MemsolveError
from . import bench as benchmod
from .knobs import KNOBS

STATIC = Path(__file__).parent / "static"
MAX_POLICY = 1 << 20  # characters of policy text a request may carry
_LOOPBACK = ("127.0.0.1", "localhost", "::1")
_WILDCARD = ("0.0.0.0", "::", "")  # every address of the machine


def served_hosts(host: str, allow: Sequence[str] = ()) -> list[str]:
    """The Host header values the page answers to: loopback, the address it is served on, the
    ``allow`` names (``--allow-host``) and, for a wildcard address (``0.0.0.0``, ``::``), the
    machine's own names and the addresses they resolve to, since a browser elsewhere on the
    network names the machine in its Host header. Any other name is refused: a page elsewhere
    cannot reach this one by DNS rebinding."""
    names = {*_LOOPBACK, host, *allow}
    if host in _WILDCARD:
        names |= _machine_names()
    return sorted({_host_header(name) for name in names if name})


def _machine_names() -> set[str]:
    names = {socket.gethostname(), socket.getfqdn()}
    for name in list(names):
        try:  # the resolver's answer for the machine's own name (usually /etc/hosts)
            names |= {str(info[4][0]).partition("%")[0] for info in socket.getaddrinfo(name, None)}
        except OSError:
            continue
    return names


def _host_header(name: str) -> str:
    """A name as a Host header carries it: an IPv6 address in brackets, lower case."""
    name = name.strip().lower()
    return f"[{name}]" if ":" in name and not name.startswith("[") else name


def create_app(bench: benchmod.Bench, host: str = "127.0.0.1", allow_hosts: Sequence[str] = ()) -> Starlette:
    """The app for one opened policy and record set; ``host`` is the address it is served on,
    ``allow_hosts`` more names it answers to (see :func:`served_hosts`)."""
    lock = threading.Lock()  # one run at a time: runs are CPU-bound and share the loaded records

    def evaluate(text: str, edits: dict[str, Any]) -> dict[str, Any]:
        with lock:
            return benchmod.evaluate(bench, text, edits)

    def saved(text: str) -> str:
        with lock:
            return benchmod.save(bench, text)

    async def page(request: Request) -> Response:
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-store"})

    async def start(request: Request) -> Response:
        first = await _threaded(evaluate, bench.policy_text, {})
        return JSONResponse({
            "policy_file": bench.policy_file,
            "records_file": Path(bench.records_file).name,
            "controls": [{"name": k.name, "label": k.label, "kind": k.kind, "choices": list(k.choices),
                       "removable": k.removable} for k in KNOBS],
            "original": bench.policy_text,
            # the labelled queries, offered as questions (seed 004's fixed questions)
            "questions": sorted(bench.labelled.relevant) if bench.labelled else [],
            **first,
        })

    async def run(request: Request) -> Response:
        body = await _body(request)
        if isinstance(body, Response):
            return body
        edits = body.get("edits", {})
        if not isinstance(edits, dict):
            return _bad("`edits` must be an object of knob fields")
        return JSONResponse(await _threaded(evaluate, body["yaml"], edits))

    async def save(request: Request) -> Response:
        body = await _body(request)
        if isinstance(body, Response):
            return body
        try:
            text = await _threaded(saved, body["yaml"])
        except MemsolveError as error:
            return JSONResponse({"error": benchmod.error_of(error)}, status_code=422)
        name = Path(bench.policy_file).stem + "-workbench.yaml"
        return Response(text, media_type="application/yaml",
                        headers={"Content-Disposition": f'attachment; filename="{name}"'})

    hosts = [*served_hosts(host, allow_hosts), "testserver"]  # testserver: starlette's TestClient
    return Starlette(
        routes=[
            Route("/", page),
            Route("/api/start", start),
            Route("/api/run", run, methods=["POST"]),
            Route("/api/save", save, methods=["POST"]),
            Mount("/static", StaticFiles(directory=STATIC), name="static"),
        ],
        middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=hosts)],
    )


async def _threaded(func: Any, *args: Any) -> Any:
    from starlette.concurrency import run_in_threadpool

    return await run_in_threadpool(func, *args)


def _bad(message: str) -> Response:
    return JSONResponse({"error": {"message": f"error: {message}", "line": None, "column": None, "path": "",
                                   "field": None, "exit_code": 2}}, status_code=400)


async def _body(request: Request) -> dict[str, Any] | Response:
    """The JSON body, with a string ``yaml``; JSON only (a cross-site form cannot post it)."""
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
        return _bad("the API takes application/json")
    try:
        body = await request.json()
    except ValueError:
        return _bad("the request body is not JSON")
    if not isinstance(body, dict) or not isinstance(body.get("yaml"), str):
        return _bad("the request needs `yaml`, the policy text")
    if len(body["yaml"]) > MAX_POLICY:
        return _bad(f"the policy text is longer than {MAX_POLICY} characters")
    return body
