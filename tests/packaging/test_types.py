"""The type check holds for the domain package, the fixture writers and the Dagster wiring
(assets, resources, sensors, the command line): ``[tool.mypy]`` in pyproject.toml."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration  # runs mypy (~40 s cold on 2 cores)

PROJECT = Path(__file__).resolve().parents[2]


def test_mypy_finds_no_error(tmp_path):
    done = subprocess.run(
        [str(Path(sys.executable).parent / "mypy"), "--cache-dir", str(tmp_path / "cache")],
        cwd=PROJECT, capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-2000:]
    assert "Success: no issues found" in done.stdout
