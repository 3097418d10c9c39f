"""What an encoded image is from its first bytes, without decoding it.

A PNG's IHDR is read here (in microseconds; its chunk layout is fixed, so this is what libpng
reads); a JPEG's header is read by libjpeg-turbo itself, in ``frames.codec`` (a marker parser of
ours was fooled by a frame header hidden behind ``FF 00``). No other format is a camera frame:
a camera declares JPEG or PNG (RLDS's ``encodingFormat``, LeRobot's and Minari's writers), and a
GIF, WebP or TIFF in its place (an animated GIF decodes every frame: 293 KB became 4.1 GB) is
refused by its first bytes (:func:`image_format`), before anything decodes it.
"""

from __future__ import annotations

import struct
import zlib

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

_IHDR_LENGTH = struct.pack(">I", 13)
_PNG_CHANNELS = {0: 1, 2: 3, 3: 3, 4: 2, 6: 4}  # by colour type; palette decodes to RGB


def png_prefix(width: int, height: int, bit_depth: int, colour_type: int) -> bytes:
    """The first 26 bytes of every PNG of that size and kind: the signature, then the IHDR
    chunk's length (13), type, width, height, bit depth and colour type. A frame that does not
    start with them is not that PNG, whatever bytes it holds further on."""
    return (
        PNG_SIGNATURE
        + _IHDR_LENGTH
        + b"IHDR"
        + struct.pack(">IIBB", width, height, bit_depth, colour_type)
    )


def png_header(data: bytes | bytearray | memoryview) -> tuple[int, int, int, int] | None:
    """(channels, height, width, bit depth) of a PNG's IHDR, as libpng reads it: trusted only
    when the chunk layout is PNG's (IHDR first, 13 bytes long, its CRC right, dimensions in
    1..2**31-1); None otherwise."""
    data = bytes(data[:33])
    if len(data) < 33 or data[8:16] != _IHDR_LENGTH + b"IHDR":
        return None
    (crc,) = struct.unpack(">I", data[29:33])
    if zlib.crc32(data[12:29]) != crc:
        return None
    width, height = struct.unpack(">II", data[16:24])
    if not (0 < width < 2**31 and 0 < height < 2**31) or data[25] not in _PNG_CHANNELS:
        return None
    return _PNG_CHANNELS[data[25]], height, width, data[24]


def _png(data: bytes | bytearray) -> tuple[int, int, int] | None:
    header = png_header(data)
    return None if header is None else header[:3]


def image_format(data: bytes) -> str:
    """``jpeg`` or ``png`` by the signature; else what the bytes look like (``gif``, ``webp``,
    ``bmp``, ``tiff``) or ``unknown``: named in the error that refuses them."""
    if data.startswith(PNG_SIGNATURE):
        return "png"
    if data.startswith(b"\xff\xd8"):
        return "jpeg"
    for signature, name in _OTHERS:
        if data.startswith(signature):
            return name
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    return "unknown"


_OTHERS = ((b"GIF87a", "gif"), (b"GIF89a", "gif"), (b"BM", "bmp"), (b"II*\x00", "tiff"),
           (b"MM\x00*", "tiff"))  # fmt: skip


def image_size(data: bytes | bytearray) -> tuple[int, int, int] | None:
    """(channels, height, width) declared by a PNG's header; None for any other bytes. A JPEG's
    header is read by its decoder alone (``frames.codec``: a parser of ours was fooled by a
    frame header hidden behind ``FF 00``)."""
    return _png(data) if data.startswith(PNG_SIGNATURE) else None
