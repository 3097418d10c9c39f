"""Every JSON the warehouse writes is strict JSON (#48): ``json.dumps`` writes ``Infinity`` and
``NaN`` by default, which no JSON parser but Python's accepts (a statistics file published
``std: Infinity``). Each call in the shipped packages passes ``allow_nan=False``, so a value
that is not finite is an error where it is written, never a file others cannot read."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[3]
PACKAGES = ("episode_warehouse", "warehouse_cli", "assets", "resources", "sensors")


def _lax_calls(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    return [
        f"{path.relative_to(PROJECT)}:{node.lineno}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("dump", "dumps")
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "json"
        and not any(
            k.arg == "allow_nan" and isinstance(k.value, ast.Constant) and k.value.value is False
            for k in node.keywords
        )
    ]


@pytest.mark.parametrize("package", PACKAGES)
def test_every_json_write_refuses_infinity_and_nan(package):
    lax = [c for p in sorted((PROJECT / package).rglob("*.py")) for c in _lax_calls(p)]
    assert lax == [], f"json.dump(s) without allow_nan=False: {lax}"
