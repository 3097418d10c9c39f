"""Iterate the records of a TFRecord file, verifying both checksums of every record.

A record is ``uint64 length`` (little endian), ``uint32 masked_crc32c(length bytes)``,
``length`` bytes of data, ``uint32 masked_crc32c(data)``; ``masked = ((crc >> 15) | (crc << 17))
+ 0xa282ead8`` (mod 2**32), crc32c being Castagnoli's. Files may be GZIP-compressed as a whole
(RL Unplugged's are); ISA-L inflates them.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from typing import BinaryIO

import google_crc32c
from isal import igzip
from isal.igzip_lib import IsalError

from episode_warehouse.errors import CorruptInputError, LimitExceededError
from episode_warehouse.limits import InputLimits

_MASK_DELTA = 0xA282EAD8
_HEADER = 12  # length + its crc
_REFETCH = "delete the file and materialize the raw stage again (it is re-downloaded)"


def masked_crc32c(data: bytes | memoryview) -> int:
    crc = google_crc32c.value(bytes(data))
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


_CHUNK = 8 << 20


def _read(fh: BinaryIO, n: int) -> bytes:
    """Up to ``n`` bytes, read in chunks: memory follows the bytes that are really there, not
    the length a record declares (a 1 MB file may declare a 400 MB record)."""
    first = fh.read(min(n, _CHUNK)) if n else b""
    if len(first) == n or not first:
        return first
    buf = bytearray(first)
    while len(buf) < n:
        chunk = fh.read(min(n - len(buf), _CHUNK))
        if not chunk:
            break
        buf += chunk
    return bytes(buf)


def iter_records(
    fh: BinaryIO, name: str, *, max_record_bytes: int = InputLimits.max_record_bytes
) -> Iterator[tuple[int, bytes]]:
    """``(offset, data)`` of each record of an uncompressed TFRecord stream.

    ``offset`` is the record's byte offset in the (uncompressed) stream, named in errors.

    Raises:
        CorruptInputError: a length or data checksum that does not match, or a stream that ends
            inside a record.
        LimitExceededError: a record declaring more than ``max_record_bytes``.
    """
    offset = 0
    while True:
        header = _read(fh, _HEADER)
        if not header:
            return
        if len(header) < _HEADER:
            raise _corrupt(name, offset, "the file ends inside a record header (truncated)")
        (length,) = struct.unpack("<Q", header[:8])
        (length_crc,) = struct.unpack("<I", header[8:])
        if masked_crc32c(header[:8]) != length_crc:
            raise _corrupt(name, offset, "the record length's crc32c does not match")
        if length > max_record_bytes:
            raise LimitExceededError(
                f"the record at byte {offset} declares {length} bytes, over the limit of "
                f"{max_record_bytes}",
                subject=name,
                fix="raise max_record_bytes (EPISODE_WAREHOUSE_LIMITS) if the file is trusted",
            )
        data = _read(fh, length)
        crc = _read(fh, 4) if len(data) == length else b""
        if len(crc) < 4:
            raise _corrupt(name, offset, "the file ends inside a record (truncated)")
        (data_crc,) = struct.unpack("<I", crc)
        if masked_crc32c(data) != data_crc:
            raise _corrupt(name, offset, "the record data's crc32c does not match")
        yield offset, data
        offset += _HEADER + length + 4


def _corrupt(name: str, offset: int, what: str) -> CorruptInputError:
    return CorruptInputError(f"record at byte {offset}: {what}", subject=name, fix=_REFETCH)


def iter_gzip_records(
    fh: BinaryIO, name: str, *, max_record_bytes: int = InputLimits.max_record_bytes
) -> Iterator[tuple[int, bytes]]:
    """:func:`iter_records` of a GZIP-compressed TFRecord file.

    Raises:
        CorruptInputError: as :func:`iter_records`, or a gzip stream that is corrupt or cut.
    """
    try:
        with igzip.open(fh, "rb") as stream:
            yield from iter_records(stream, name, max_record_bytes=max_record_bytes)
    except (EOFError, OSError, zlib.error, IsalError) as exc:  # type: ignore[misc]
        raise CorruptInputError(
            f"the gzip stream is corrupt or truncated ({exc})", subject=name, fix=_REFETCH
        ) from exc
