"""Numbers that come from outside: finite where they are measurements, within their bounds.

A NaN action trains a policy into NaN; an infinite return passes a check whose tolerance scales
with the value. :func:`finite_number` checks one declared value (a record's return, a declared
fps) and :func:`check_finite` an array, naming the first bad element where the caller says
where a row is (``locate``: row -> "episode 3 step 17 (file)").
"""

from __future__ import annotations

import math
from collections.abc import Callable
from decimal import Decimal

import numpy as np

from episode_warehouse.errors import ConfigError, CorruptInputError

CHUNK_ELEMENTS = 1 << 22  # checked this many at a time: memory stays bounded on a memmap


def finite_number(value: object, *, what: str, subject: str, fix: str) -> float:
    """``value`` as a float when it is a finite real number (bool is refused).

    Raises:
        CorruptInputError: naming ``what`` and the value.
    """
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise CorruptInputError(f"{what} is {value!r}, not a number", subject=subject, fix=fix)
    number = float(value)
    if not math.isfinite(number):
        raise CorruptInputError(
            f"{what} is {number}, not a finite number", subject=subject, fix=fix
        )
    return number


def positive_weight(value: object, *, what: str, subject: str) -> float:
    """A sampling weight a user gave (a list entry, a SQL row's ``weight``): a finite number
    above 0 (an int, float, numpy scalar or SQL DECIMAL; bool, text and NULL refused).

    Raises:
        ConfigError: naming ``what`` and the value.
    """
    fix = "weights are finite numbers above 0: leave a dataset out rather than weigh it 0"
    numeric = int | float | np.integer | np.floating | Decimal
    if isinstance(value, bool) or not isinstance(value, numeric):
        raise ConfigError(f"the weight of {what} is {value!r}, not a number", subject=subject,
                          fix=fix)  # fmt: skip
    number = float(value)
    if not math.isfinite(number) or number <= 0:
        raise ConfigError(f"the weight of {what} is {number}", subject=subject, fix=fix)
    return number


def _finite_chunks(values: np.ndarray, rows: int | None):
    """(first row, per-row "all finite" flags) of the first ``rows`` rows, read in chunks."""
    rows = len(values) if rows is None else rows
    per_row = max(1, int(np.prod(values.shape[1:], dtype=np.int64)))
    step = max(1, CHUNK_ELEMENTS // per_row)
    for start in range(0, rows, step):
        chunk = np.asarray(values[start : min(rows, start + step)]).reshape(-1, per_row)
        finite = np.isfinite(chunk)
        yield start, finite.all(axis=1), int((~finite).sum())


def nonfinite_rows(values: np.ndarray, rows: int | None = None) -> tuple[int, int]:
    """(how many elements of the first ``rows`` rows are NaN or infinite, the first such row;
    -1 when none), read in chunks; 0 and -1 for arrays that are not floating point."""
    if values.dtype.kind not in "fc":
        return 0, -1
    count, first = 0, -1
    for start, ok, bad in _finite_chunks(values, rows):
        if bad:
            if first < 0:
                first = start + int(np.argmin(ok))
            count += bad
    return count, first


def check_finite(
    values: np.ndarray,
    *,
    key: str,
    subject: str,
    fix: str,
    rows: int | None = None,
    locate: Callable[[int], str] | None = None,
    name_rows: Callable[[np.ndarray], str] | None = None,
) -> None:
    """Refuse ``values`` (its first ``rows`` rows) if any element is NaN or infinite;
    ``name_rows`` says where all the bad rows are (the episodes that hold them).

    Raises:
        CorruptInputError: naming the key, the first bad row (through ``locate``) and the count.
    """
    count, first = nonfinite_rows(values, rows)
    if count:
        row = np.asarray(values[first]).reshape(-1)
        bad = row[~np.isfinite(row)][0]
        where = locate(first) if locate is not None else f"row {first}"
        also = f"; {name_rows(_bad_rows(values, rows))}" if name_rows is not None else ""
        raise CorruptInputError(
            f"{key} is {bad} at {where} ({count} values NaN or infinite{also})",
            subject=subject,
            fix=fix,
        )


def _bad_rows(values: np.ndarray, rows: int | None) -> np.ndarray:
    """Every row (of the first ``rows``) holding a NaN or infinity (read on refusal only)."""
    found = [start + np.flatnonzero(~ok) for start, ok, _ in _finite_chunks(values, rows)]
    return np.concatenate(found) if found else np.zeros(0, np.int64)
