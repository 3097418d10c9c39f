"""What every fuzzed run must end in: the unmutated value or an error of our hierarchy, with
memory under a bound and nothing written outside its own folder."""

from __future__ import annotations

import os
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from episode_warehouse.errors import WarehouseError

# a fixed seed (derandomize) and a short budget in ./test; FUZZ_EXAMPLES or the slow tier's
# "long" budget for more
SHORT = int(os.environ.get("FUZZ_EXAMPLES", "25"))
LONG = 150
BUDGETS = [pytest.param(SHORT, id="short"), pytest.param(LONG, id="long", marks=pytest.mark.slow)]


def fuzz_settings(examples: int) -> settings:
    return settings(
        max_examples=examples,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )


def _listing(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*")}


def ends_well[T](
    run: Callable[[], T],
    *,
    sandbox: Path,
    work: Path | None = None,
    max_bytes: int = 256 << 20,
) -> T | WarehouseError:
    """Run ``run`` and return its value or the error of our hierarchy it raised; anything else
    (a bare RecursionError, OverflowError, KeyError, ...) fails the test. Python allocations
    (numpy's included) peak under ``max_bytes``; nothing appears in ``sandbox`` outside
    ``work`` (the one folder the reader may write)."""
    before = {p for p in _listing(sandbox) if work is None or not p.is_relative_to(work)}
    tracemalloc.start()
    try:
        try:
            result: T | WarehouseError = run()
        except WarehouseError as exc:
            result = exc
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < max_bytes, f"{peak:,} bytes at the peak"
    after = {p for p in _listing(sandbox) if work is None or not p.is_relative_to(work)}
    assert after == before, f"written outside its folder: {sorted(after - before)[:5]}"
    if isinstance(result, WarehouseError):
        assert str(result).strip(), "an error without a message"
    return result
