"""Dependencies run one way: import-linter's contracts in pyproject.toml hold for the project,
and the same kind of contract fails on a package that breaks it inside a function."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration  # runs lint-imports

PROJECT = Path(__file__).resolve().parents[2]
LINT = str(Path(sys.executable).parent / "lint-imports")


def _lint(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(cwd)}
    return subprocess.run(
        [LINT, "--no-cache", *args], cwd=cwd, env=env, capture_output=True, text=True,
        check=False, timeout=300,
    )  # fmt: skip


def test_the_projects_import_contracts_hold():
    done = _lint(PROJECT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Contracts: 7 kept, 0 broken." in done.stdout, done.stdout


def test_an_import_inside_a_function_breaks_a_contract(tmp_path):
    domain = tmp_path / "toy_domain"
    domain.mkdir()
    (domain / "__init__.py").write_text("")
    (domain / "stage.py").write_text("def build():\n    import toy_wiring.assets\n")
    wiring = tmp_path / "toy_wiring"
    wiring.mkdir()
    (wiring / "__init__.py").write_text("")
    (wiring / "assets.py").write_text("")
    (tmp_path / ".importlinter").write_text(
        "[importlinter]\nroot_packages =\n    toy_domain\n    toy_wiring\n\n"
        "[importlinter:contract:one-way]\nname = the domain never imports the wiring\n"
        "type = forbidden\nsource_modules =\n    toy_domain\nforbidden_modules =\n"
        "    toy_wiring\n"
    )
    done = _lint(tmp_path, "--config", str(tmp_path / ".importlinter"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "toy_domain.stage -> toy_wiring.assets" in done.stdout, done.stdout


def _imported(path: Path) -> set[str]:
    """The top-level packages ``path`` imports, at any depth of its code."""
    import ast

    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


def test_the_code_location_sits_between_the_command_line_and_the_sensors():
    """``definitions.py`` is a module, which import-linter cannot layer: it imports no command
    line code, and no sensor, asset, resource or domain code imports it."""
    assert "warehouse_cli" not in _imported(PROJECT / "definitions.py")
    below = ("sensors", "assets", "resources", "episode_warehouse")
    found = [
        str(path.relative_to(PROJECT))
        for package in below
        for path in sorted((PROJECT / package).rglob("*.py"))
        if "definitions" in _imported(path)
    ]
    assert found == []
