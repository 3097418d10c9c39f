"""The header of an ``.npy`` file from outside: one check for every reader of one.

A TED's arrays are ``.npy`` files that a folder reader maps and a bucket reader fetches by byte
ranges; a Dopamine checkpoint is one inside a gzip stream. Whoever can write the files can write
any header: a short one (numpy's parser raised ``tokenize.TokenError``), a negative or boolean
dimension (``RuntimeError`` from torch's map), ``(2**63, 0)`` (an overflow in torch), a header
length of 4 GiB (numpy reads what is declared), a big-endian or object dtype, Fortran order.
Every one of them is a :class:`~episode_warehouse.errors.CorruptInputError` here, naming the file
and the fix, and the declared array must fit in the bytes that follow the header.
"""

from __future__ import annotations

import io
import struct
import tokenize
from dataclasses import dataclass

import numpy as np

from episode_warehouse.errors import CorruptInputError
from episode_warehouse.guards.shapes import checked_shape

MAGIC = b"\x93NUMPY"
MAX_HEADER = 10_000  # numpy's own bound on a header it parses
_PARSE = {1: np.lib.format.read_array_header_1_0, 2: np.lib.format.read_array_header_2_0,
          3: np.lib.format.read_array_header_2_0}  # fmt: skip
# what numpy's parser raises on a damaged header (a null byte: TokenError; deep nesting: ...)
_PARSE_ERRORS = (ValueError, TypeError, SyntaxError, tokenize.TokenError, struct.error,
                 OverflowError, MemoryError, RecursionError, EOFError)  # fmt: skip


@dataclass(frozen=True)
class NpyHeader:
    """Where an ``.npy`` file's data starts, and the array it declares."""

    offset: int
    shape: tuple[int, ...]
    dtype: np.dtype

    @property
    def rows(self) -> int:
        """The first dimension (0 for a scalar)."""
        return self.shape[0] if self.shape else 0

    @property
    def row_bytes(self) -> int:
        n = self.dtype.itemsize
        for d in self.shape[1:]:
            n *= d
        return n

    @property
    def nbytes(self) -> int:
        n = self.dtype.itemsize
        for d in self.shape:
            n *= d
        return n


def header_length(first: bytes, *, subject: str, fix: str) -> int:
    """How many bytes from the start of the file hold the header (magic, version, length and
    the header itself), read from its first 12 bytes; bounded by :data:`MAX_HEADER`.

    Raises:
        CorruptInputError: no ``.npy`` magic, an unknown version, or a longer header.
    """
    if len(first) < 10 or not first.startswith(MAGIC) or first[6] not in _PARSE:
        raise CorruptInputError(
            f"not an .npy array (it starts {bytes(first[:8])!r})", subject=subject, fix=fix
        )
    prefix = 10 if first[6] == 1 else 12
    if len(first) < prefix:
        raise CorruptInputError("the .npy header is cut short", subject=subject, fix=fix)
    (length,) = struct.unpack("<H" if first[6] == 1 else "<I", first[8:prefix])
    if length > MAX_HEADER:
        raise CorruptInputError(
            f"the .npy header declares {length:,} bytes (numpy writes at most a few hundred)",
            subject=subject,
            fix=fix,
        )
    return prefix + length


def parse_header(
    head: bytes,
    *,
    subject: str,
    fix: str,
    data_bytes: int | None = None,
    what: str = "the .npy header",
) -> NpyHeader:
    """The header at the start of ``head`` (at least :func:`header_length` bytes), checked: a
    C-ordered array of a native, non-object dtype whose every dimension is a size, and which
    fits in ``data_bytes`` (the bytes after the header; None: not known here).

    Raises:
        CorruptInputError: anything else (a ``LimitExceededError`` where the array is larger
            than the bytes that follow).
    """
    end = header_length(head, subject=subject, fix=fix)
    if len(head) < end:
        raise CorruptInputError(
            f"the .npy header ends after {len(head)} of its {end} bytes", subject=subject, fix=fix
        )
    stream = io.BytesIO(bytes(head[:end]))
    stream.seek(8)
    try:
        shape, fortran, dtype = _PARSE[head[6]](stream)
    except _PARSE_ERRORS as exc:
        raise CorruptInputError(
            f"the .npy header does not parse ({type(exc).__name__}: {exc})",
            subject=subject,
            fix=fix,
        ) from None
    why = (
        "Fortran order" if fortran else "an object dtype" if dtype.hasobject
        else "another byte order than this machine's" if not dtype.isnative
        else "items of no size" if not dtype.itemsize else None
    )  # fmt: skip
    if why is not None:
        raise CorruptInputError(
            f"the .npy header declares an array of {dtype.str} with {why}: only C-ordered "
            "arrays of this machine's byte order are read",
            subject=subject,
            fix=fix,
        )
    dims = checked_shape(
        list(shape),
        dtype=dtype,
        subject=subject,
        what=what,
        max_bytes=data_bytes if data_bytes is not None else 2**62,
        fix=fix,
    )
    return NpyHeader(end, dims, dtype)


def read_header(
    fh, *, subject: str, fix: str, file_bytes: int | None = None, what: str = "the .npy header"
) -> NpyHeader:
    """:func:`parse_header` of a stream positioned at the file's start (a file, a gzip stream),
    reading the header's bytes alone (its declared length is bounded before it is read), and
    leaving the stream at the first byte of data. ``file_bytes``: the most the whole file can
    hold (its size; a gzip stream's bound), where known."""
    first = fh.read(12)
    end = header_length(first, subject=subject, fix=fix)
    head = first[:end] + fh.read(max(end - len(first), 0))
    if len(first) > end:  # a version 1 header of 10 bytes' prefix and no dict: nothing to undo
        raise CorruptInputError("the .npy header is cut short", subject=subject, fix=fix)
    left = None if file_bytes is None else file_bytes - end
    return parse_header(head, subject=subject, fix=fix, data_bytes=left, what=what)
