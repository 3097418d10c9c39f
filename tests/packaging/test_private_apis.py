"""Private Dagster APIs (``dagster._*``) are imported in one module only,
``warehouse_cli/cluster/private_api.py``, where each is named with the version it was checked
against; every import is counted, those inside functions too."""

from __future__ import annotations

import ast
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]
WIRING = ("assets", "resources", "sensors", "warehouse_cli", "episode_warehouse")
ALLOWED = PROJECT / "warehouse_cli" / "cluster" / "private_api.py"


def private_imports(path: Path) -> list[str]:
    """``module`` of every import of a name below ``dagster._`` in the file at ``path``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith("dagster._")]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("dagster._"):
            found.append(node.module or "")
    return found


def test_private_dagster_apis_are_imported_in_one_module_only():
    files = [PROJECT / "definitions.py"]
    files += [p for top in WIRING for p in (PROJECT / top).rglob("*.py")]
    offenders = {str(p.relative_to(PROJECT)): private_imports(p) for p in files if p != ALLOWED}
    assert {p: m for p, m in offenders.items() if m} == {}
    assert private_imports(ALLOWED), "the allowed module imports them: the check reads imports"


def test_an_import_inside_a_function_is_found(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from dagster._core.launcher import WorkerStatus\n")
    assert private_imports(module) == ["dagster._core.launcher"]
