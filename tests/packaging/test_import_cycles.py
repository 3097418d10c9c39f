"""The subpackages (and top-level modules) of ``episode_warehouse`` import each other in no
cycle, every import counted (those inside functions too): checked here with grimp's graph on its
own, apart from the layers contract that implies it, and shown to catch a cycle made inside a
function."""

from __future__ import annotations

import sys
from collections import defaultdict

import grimp


def subpackage_cycles(package: str) -> list[list[str]]:
    """The strongly connected groups (more than one member) of ``package``'s first-level
    subpackages and modules, by direct imports between their modules."""
    graph = grimp.build_graph(package, cache_dir=None)
    edges: dict[str, set[str]] = defaultdict(set)

    def part(module: str) -> str | None:
        names = module.split(".")
        return names[1] if len(names) > 1 else None  # the package's own __init__: no part

    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            a, b = part(module), part(imported)
            if a and b and a != b:
                edges[a].add(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return groups


def test_the_domain_package_has_no_import_cycle_between_subpackages():
    assert subpackage_cycles("episode_warehouse") == []


def test_a_cycle_through_an_import_inside_a_function_is_found(tmp_path, monkeypatch):
    root = tmp_path / "toy_cycle"
    for sub in ("low", "high"):
        (root / sub).mkdir(parents=True)
        (root / sub / "__init__.py").write_text("")
    (root / "__init__.py").write_text("")
    (root / "high" / "stage.py").write_text("import toy_cycle.low.reader\n")
    (root / "low" / "reader.py").write_text("def read():\n    from toy_cycle.high import stage\n")
    (root / "alone.py").write_text("import toy_cycle.low\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert subpackage_cycles("toy_cycle") == [["high", "low"]]
    finally:
        for name in [m for m in sys.modules if m.startswith("toy_cycle")]:
            del sys.modules[name]
