"""No import cycle, every import counted (those inside functions too): neither between the
subpackages (and top-level modules) of ``episode_warehouse`` nor between any two modules of the
project's packages (issue #58: ``ted/reader`` <-> ``ranges`` <-> ``chunks`` was the last one).
Checked with grimp's graph on its own, apart from the layers contract that implies the first,
and shown to catch a cycle made inside a function."""

from __future__ import annotations

import sys
from collections import defaultdict

import grimp

PACKAGES = (
    "episode_warehouse",
    "warehouse_cli",
    "warehouse_fixtures",
    "assets",
    "resources",
    "sensors",
)


def _first_level(module: str) -> str | None:
    names = module.split(".")
    return names[1] if len(names) > 1 else None  # the package's own __init__: no part


def _module(module: str) -> str | None:
    return module


def subpackage_cycles(package: str) -> list[list[str]]:
    """The strongly connected groups (more than one member) of ``package``'s first-level
    subpackages and modules, by direct imports between their modules."""
    return cycles((package,), _first_level)


def module_cycles(*packages: str) -> list[list[str]]:
    """The strongly connected groups of modules of ``packages`` (a package's ``__init__`` is a
    module: importing a name from the package imports it)."""
    return cycles(packages, _module)


def cycles(packages: tuple[str, ...], part) -> list[list[str]]:
    """The strongly connected groups of ``part(module)`` over the modules of ``packages``."""
    graph = grimp.build_graph(*packages, cache_dir=None)
    edges: dict[str, set[str]] = defaultdict(set)

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


def test_no_two_modules_of_the_project_import_each_other():
    assert module_cycles(*PACKAGES) == []


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
        assert module_cycles("toy_cycle") == [["toy_cycle.high.stage", "toy_cycle.low.reader"]]
    finally:
        for name in [m for m in sys.modules if m.startswith("toy_cycle")]:
            del sys.modules[name]
