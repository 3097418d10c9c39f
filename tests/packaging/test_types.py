"""The type check holds for the domain package, the fixture writers and the Dagster wiring
(assets, resources, sensors, the command line): ``[tool.mypy]`` in pyproject.toml."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow(
        reason="mypy over 308 files: ~45 s cold, as on a fresh clone; the import "
        "contracts (lint-imports) stay in the default tier"
    ),
]

PROJECT = Path(__file__).resolve().parents[2]


def test_mypy_finds_no_error():
    # mypy's own incremental cache, beside the project (ignored by git): a run after a small
    # change checks what changed (a fresh clone's first run is the cold one)
    done = subprocess.run(
        [str(Path(sys.executable).parent / "mypy"), "--cache-dir", str(PROJECT / ".mypy_cache")],
        cwd=PROJECT, capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-2000:]
    assert "Success: no issues found" in done.stdout
