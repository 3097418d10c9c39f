"""Untrusted bytes: a TFRecord record's declared length and an image header are checked before
memory or decoding time is spent on them."""

from __future__ import annotations

import gzip
import io
import struct
import tracemalloc
import zlib

import numpy as np
import pytest
from PIL import Image

from episode_warehouse.errors import CorruptInputError, LimitExceededError
from episode_warehouse.image_header import image_size, png_prefix
from episode_warehouse.limits import InputLimits
from episode_warehouse.sources.atari import rlu_episode
from episode_warehouse.tfrecord.records import iter_gzip_records, masked_crc32c


def _declaring(length: int, present: int) -> bytes:
    """A gzip TFRecord file whose one record declares ``length`` bytes but holds ``present``."""
    head = struct.pack("<Q", length)
    raw = head + struct.pack("<I", masked_crc32c(head)) + b"\0" * present
    return gzip.compress(raw, compresslevel=1)


def test_a_record_declaring_more_than_the_limit_is_refused_before_reading():
    data = _declaring(1 << 30, 1 << 20)  # 1 GiB declared by a ~1 KB file
    with pytest.raises(LimitExceededError, match="max_record_bytes"):
        list(iter_gzip_records(io.BytesIO(data), "evil.tfrecord"))
    assert InputLimits().max_record_bytes == 512 << 20
    assert InputLimits.parse("max_record_bytes=1000").max_record_bytes == 1000


def test_memory_follows_the_bytes_present_not_the_declared_length():
    data = _declaring(400 << 20, 1 << 20)  # under the limit, but cut after 1 MB
    tracemalloc.start()
    try:
        with pytest.raises(CorruptInputError, match="truncated"):
            list(iter_gzip_records(io.BytesIO(data), "cut.tfrecord"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20, f"peak {peak / 2**20:.0f} MiB for a 1 MB record"


def _jpeg(size: int) -> bytes:
    out = io.BytesIO()
    Image.new("L", (size, size), 128).save(out, format="JPEG")
    return out.getvalue()


def test_a_jpeg_with_an_ihdr_planted_at_byte_12_is_not_decoded(monkeypatch):
    jpeg = bytearray(_jpeg(3000))
    jpeg[12:26] = png_prefix(84, 84, 8, 0)[12:]  # what a gray 84x84 PNG has at 12..26
    calls = []
    import cv2

    real = cv2.imdecode
    monkeypatch.setattr(cv2, "imdecode", lambda *a: calls.append(1) or real(*a))
    out = np.zeros((1, 84, 84), np.uint8)
    with pytest.raises(CorruptInputError, match="84x84 gray PNG"):
        rlu_episode.decode_frames([bytes(jpeg)], out, "evil.tfrecord")
    assert calls == []  # refused from the header, never handed to the decoder
    assert image_size(bytes(jpeg)) != (1, 84, 84)  # the planted IHDR is never believed


def _png(width: int, height: int) -> bytes:
    out = io.BytesIO()
    Image.new("L", (width, height), 7).save(out, format="PNG")
    return out.getvalue()


def test_png_headers_are_trusted_only_with_png_chunk_layout():
    good = _png(84, 60)
    assert image_size(good) == (1, 60, 84)
    assert good[:26] == png_prefix(84, 60, 8, 0)
    huge = bytearray(good)
    huge[16:24] = struct.pack(">II", 60000, 60000)  # dimensions changed, CRC not
    assert image_size(bytes(huge)) is None
    crc = zlib.crc32(bytes(huge[12:29]))
    huge[29:33] = struct.pack(">I", crc)  # a consistent chunk: trusted, and then over limits
    assert image_size(bytes(huge)) == (1, 60000, 60000)
    long_chunk = bytearray(good)
    long_chunk[8:12] = struct.pack(">I", 14)
    assert image_size(bytes(long_chunk)) is None
