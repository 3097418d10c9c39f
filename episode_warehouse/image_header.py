"""The size of an encoded image from its first bytes, without decoding it.

PNG (IHDR) and JPEG (the SOF marker) are read directly, in microseconds. No other format is a
camera frame here: a camera declares JPEG or PNG (RLDS's ``encodingFormat``, LeRobot's and
Minari's writers), and a GIF, WebP or TIFF in its place (an animated GIF decodes every frame:
293 KB became 4.1 GB) is refused by its first bytes, before anything decodes it. Used to refuse
images over the pixel limit before decoding.
"""

from __future__ import annotations

import struct
import zlib

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

_IHDR_LENGTH = struct.pack(">I", 13)
_PNG_CHANNELS = {0: 1, 2: 3, 3: 3, 4: 2, 6: 4}  # by colour type; palette decodes to RGB
_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
_NO_LENGTH = frozenset((0x01, *range(0xD0, 0xD8)))  # TEM and RSTn: markers without a length


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


def _png(data: bytes | bytearray) -> tuple[int, int, int] | None:
    """The IHDR of a PNG, trusted only when the chunk layout is PNG's: IHDR first, 13 bytes
    long, its CRC right, dimensions in 1..2**31-1."""
    if len(data) < 33 or data[8:16] != _IHDR_LENGTH + b"IHDR":
        return None
    (crc,) = struct.unpack(">I", data[29:33])
    if zlib.crc32(data[12:29]) != crc:
        return None
    width, height = struct.unpack(">II", data[16:24])
    if not (0 < width < 2**31 and 0 < height < 2**31) or data[25] not in _PNG_CHANNELS:
        return None
    return _PNG_CHANNELS[data[25]], height, width


def jpeg_size(data: bytes | bytearray | memoryview) -> tuple[int, int, int] | None:
    """(components, height, width) of a JPEG's first frame header (SOF), read from any
    bytes-like object without copying it; None where the markers before it do not parse."""
    i = 2
    while i + 9 < len(data):
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker in _NO_LENGTH:
            i += 2
            continue
        (length,) = struct.unpack(">H", data[i + 2 : i + 4])
        if marker in _SOF:
            height, width = struct.unpack(">HH", data[i + 5 : i + 9])
            return data[i + 9], height, width
        i += 2 + length
    return None


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
    """(channels, height, width) declared by a JPEG's or PNG's header; None for any other
    bytes (another format, or a header that cannot be read)."""
    if data.startswith(PNG_SIGNATURE):
        return _png(data)
    if data.startswith(b"\xff\xd8"):
        return jpeg_size(data)
    return None
