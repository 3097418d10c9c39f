"""The size of an encoded image from its first bytes, without decoding it.

PNG (IHDR) and JPEG (the SOF marker) are read directly, in microseconds; any other format goes
through Pillow's header parser. Used to refuse images over the pixel limit before decoding.
"""

from __future__ import annotations

import io
import struct
import zlib

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

_IHDR_LENGTH = struct.pack(">I", 13)
_PNG_CHANNELS = {0: 1, 2: 3, 3: 3, 4: 2, 6: 4}  # by colour type; palette decodes to RGB
_SOF = set(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


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


def _png(data: bytes) -> tuple[int, int, int] | None:
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


def _jpeg(data: bytes) -> tuple[int, int, int] | None:
    i = 2
    while i + 9 < len(data):
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker in (0x01, *range(0xD0, 0xD8)):  # markers without a length
            i += 2
            continue
        (length,) = struct.unpack(">H", data[i + 2 : i + 4])
        if marker in _SOF:
            height, width = struct.unpack(">HH", data[i + 5 : i + 9])
            return data[i + 9], height, width
        i += 2 + length
    return None


def image_size(data: bytes) -> tuple[int, int, int] | None:
    """(channels, height, width) declared by ``data``'s header; None if it cannot be read."""
    if data.startswith(PNG_SIGNATURE):
        return _png(data)
    if data.startswith(b"\xff\xd8"):
        return _jpeg(data)
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as img:
            width, height = img.size
            return len(img.getbands()), height, width
    except (UnidentifiedImageError, OSError, ValueError):
        return None
