"""No import cycle in agentsrc_daemon, between its modules nor between its packages:
every import, at the top of a module or inside a function, parsed with ``ast`` (an import
inside a function hid the circle between the schema and the aggregates before
store/migrations/, and the one between ingest and store through the cursor record)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "agentsrc_daemon"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path) -> dict[str, set[str]]:
    """Each module under ``root`` -> the modules of the package it imports (a name
    imported from a package counts as its submodule when it is one)."""
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for path in root.rglob("*.py"):
        name = module_name(path)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {a.name for a in node.names if a.name in modules}
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    if sub in modules:
                        found.add(sub)
                    elif target in modules:
                        found.add(target)
        graph[name] = found - {name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in graph:
                continue  # outside the part looked at
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_graph_sees_imports_inside_functions_and_relative_ones() -> None:
    graph = import_graph(PACKAGE / "store")
    assert "agentsrc_daemon.store.writer" in graph["agentsrc_daemon.store"]
    assert "agentsrc_daemon.store.batch" in graph["agentsrc_daemon.store.reader"]  # in search()
    assert "agentsrc_daemon.store.aggregates" in graph["agentsrc_daemon.store.migrations.chunked"]
    assert "agentsrc_daemon.cursor" in graph["agentsrc_daemon.store.cursors"]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycle_inside_the_store() -> None:
    assert cycles(import_graph(PACKAGE / "store")) == []


def test_no_import_cycle_between_the_modules_of_the_package() -> None:
    graph = import_graph(PACKAGE)
    assert len(graph) > 100  # the whole package was read
    assert cycles(graph) == []


def unit_of(module: str) -> str:
    """The package a module belongs to (``agentsrc_daemon.store``), or the module itself
    for one at the top (``agentsrc_daemon.config``)."""
    parts = module.split(".")
    if len(parts) > 2 or (PACKAGE / parts[-1]).is_dir():
        return ".".join(parts[:2])
    return module


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for module, imported in graph.items():
        unit = unit_of(module)
        out.setdefault(unit, set()).update(unit_of(m) for m in imported)
        out[unit].discard(unit)
    return out


def test_no_loop_between_packages() -> None:
    """Imports point one way: no package (or top-level module) imports another that
    imports it back, directly or through others. (Before issue 25: ingest and store
    looped through ingest/cursor.py and the store's Batch.)"""
    packages = package_graph(import_graph(PACKAGE))
    assert {"agentsrc_daemon.ingest", "agentsrc_daemon.store", "agentsrc_daemon.config",
            "agentsrc_daemon.daemon"} <= set(packages)
    assert "agentsrc_daemon.store" in packages["agentsrc_daemon.ingest"]
    assert cycles(packages) == []
    assert cycles({"p.a": {"p.b"}, "p.b": {"p.a"}}) == [["p.a", "p.b"]]
