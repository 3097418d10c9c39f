"""The size of an encoded image from its first bytes, without decoding it.

PNG (IHDR) and JPEG (the SOF marker) are read directly, in microseconds; any other format goes
through Pillow's header parser. Used to refuse images over the pixel limit before decoding.
"""

from __future__ import annotations

import io
import struct

_PNG = b"\x89PNG\r\n\x1a\n"
_PNG_CHANNELS = {0: 1, 2: 3, 3: 3, 4: 2, 6: 4}  # by colour type; palette decodes to RGB
_SOF = set(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


def _png(data: bytes) -> tuple[int, int, int] | None:
    if len(data) < 26 or data[12:16] != b"IHDR":
        return None
    width, height = struct.unpack(">II", data[16:24])
    return _PNG_CHANNELS.get(data[25], 4), height, width


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
    if data.startswith(_PNG):
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
