"""Sizes and shapes that come from outside, bounded before anything is allocated or inflated.

A header may declare ``(10**10, 10**10)`` float32 elements in a few bytes: multiplied in numpy
it overflows (``OverflowError`` or a silent wrap), allocated it takes the machine. Here the
product is taken with Python integers and compared with a bound the caller knows (the bytes
present, the rows of another array, a limit) before any buffer exists.
"""

from __future__ import annotations

import numpy as np

from episode_warehouse.errors import CorruptInputError, LimitExceededError

MAX_DIMS = 32  # numpy's own bound on dimensions
MAX_ELEMENTS = 2**63  # torch's and numpy's sizes are signed 64-bit (dimensions of 0 count as 1)


def checked_shape(
    shape: object,
    *,
    dtype: np.dtype | str,
    subject: str,
    what: str,
    max_bytes: int,
    fix: str,
) -> tuple[int, ...]:
    """``shape`` as a tuple of ints when it is a list of at most :data:`MAX_DIMS` non-negative
    integers whose array of ``dtype`` holds at most ``max_bytes`` bytes.

    Raises:
        CorruptInputError: not a shape (``fix`` says how to get a good file).
        LimitExceededError: the array would be larger than ``max_bytes``.
    """
    if not isinstance(shape, list | tuple) or len(shape) > MAX_DIMS:
        raise CorruptInputError(
            f"{what} declares the shape {shape!r}, not a list of at most {MAX_DIMS} sizes",
            subject=subject,
            fix=fix,
        )
    dims = []
    elements = 1
    for d in shape:
        if isinstance(d, bool) or not isinstance(d, int | np.integer) or d < 0:
            raise CorruptInputError(
                f"{what} declares the shape {tuple(shape)!r}: {d!r} is not a size",
                subject=subject,
                fix=fix,
            )
        dims.append(int(d))
        elements *= max(int(d), 1)
    total = np.dtype(dtype).itemsize
    for d in dims:
        total *= d  # Python integers: no overflow
    if total > max_bytes:
        raise LimitExceededError(
            f"{what} declares {tuple(dims)} {np.dtype(dtype).name} ({total:,} bytes), over the "
            f"{max_bytes:,} bytes allowed here",
            subject=subject,
            fix=fix,
        )
    if elements >= MAX_ELEMENTS:  # (2**63, 0) holds no byte, but no array library indexes it
        raise CorruptInputError(
            f"{what} declares the shape {tuple(dims)!r}, past the {MAX_ELEMENTS:,} elements an "
            "array can index",
            subject=subject,
            fix=fix,
        )
    return tuple(dims)


def check_rows(declared: int, present: int, *, what: str, subject: str, fix: str) -> None:
    """Refuse a declared row count that is not the rows present (checked before inflating)."""
    if declared != present:
        raise CorruptInputError(
            f"{what} declares {declared:,} rows but the data has {present:,}",
            subject=subject,
            fix=fix,
        )
