"""The package's shape: imports point one way (no cycles, lazy imports included), no private name
crosses a module boundary, and every package says in its docstring what lives there."""

from __future__ import annotations

import ast
from pathlib import Path

import memsolve

PACKAGE = Path(memsolve.__file__).resolve().parent


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _imports(module: str) -> list[tuple[str, str]]:
    """(imported module, imported name) for every memsolve import in ``module`` outside
    ``if TYPE_CHECKING:`` blocks; function-level imports count."""
    path = MODULES[module]
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    found: list[tuple[str, str]] = []

    class Visitor(ast.NodeVisitor):
        def visit_If(self, node: ast.If) -> None:
            if not (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
                self.generic_visit(node)

        def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
            if node.level:
                base = package[: len(package) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            if source.split(".")[0] == "memsolve":
                found.extend((source, alias.name) for alias in node.names)

    Visitor().visit(ast.parse(path.read_text(encoding="utf-8")))
    return found


def _edges() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {m: set() for m in MODULES}
    for module in MODULES:
        for source, name in _imports(module):
            target = f"{source}.{name}" if f"{source}.{name}" in MODULES else source
            if target in MODULES and target != module and not _extension(source, name):
                edges[module].add(target)
    return edges


def _extension(source: str, name: str) -> bool:
    """``from . import _kernel``: the compiled extension module, not a Python module."""
    return name.startswith("_") and f"{source}.{name}" not in MODULES and MODULES.get(source, Path()).name == (
        "__init__.py")


def _cycle(edges: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        state[node] = 2
        path.pop()
        return None

    for node in sorted(edges):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_checker_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycles() -> None:
    edges = _edges()
    assert "memsolve.solver.compile" in edges["memsolve.pipeline"]  # the graph is read, not empty
    assert _cycle(edges) is None


def test_no_private_name_is_imported_across_modules() -> None:
    crossing = [
        (module, f"{source}.{name}")
        for module in MODULES
        for source, name in _imports(module)
        if name.startswith("_") and not name.startswith("__") and not _extension(source, name)
    ]
    assert crossing == []


def test_every_package_says_what_lives_there() -> None:
    for module, path in MODULES.items():
        if path.name == "__init__.py":
            doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
            assert doc and len(doc.split()) >= 8, f"{module}: its __init__ needs a docstring"
