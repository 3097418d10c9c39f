"""JPEG frames that one lenient reader accepts and a strict one refuses or takes an age over,
built marker by marker from the JPEG standard (ITU-T T.81) out of a real JPEG: what the sixth
round's attacker planted in a camera (#69 item 1; tests/episode_warehouse/frames/
test_jpeg_acceptance.py, bench.curation).

Each function takes a frame's pixels (uint8, (H, W, 3)) and returns the bytes; every frame still
starts with SOI and ends with EOI, so a check of the first and last bytes passes it.
"""

from __future__ import annotations

import io
import struct

import numpy as np

SOI, EOI = b"\xff\xd8", b"\xff\xd9"


def _pil_jpeg(pixels: np.ndarray, **options) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.fromarray(pixels).save(out, "JPEG", quality=90, **options)
    return out.getvalue()


def _segments(jpeg: bytes) -> list[tuple[int, int, int]]:
    """(offset, marker, length) of each marker segment from SOI to the first SOS."""
    found, i = [], 2
    while i < len(jpeg):
        marker = jpeg[i + 1]
        (length,) = struct.unpack(">H", jpeg[i + 2 : i + 4])
        found.append((i, marker, length))
        if marker == 0xDA:
            return found
        i += 2 + length
    raise ValueError("no SOS marker")


def _scan_data(jpeg: bytes) -> int:
    """Where the first scan's entropy-coded data starts."""
    offset, _, length = _segments(jpeg)[-1]
    return offset + 2 + length


def stray_bytes(pixels: np.ndarray) -> bytes:
    """Six bytes (``FF 00 00 04 AA BB``) between APP0 and the next marker: libjpeg warns of
    extraneous data and a strict reader refuses; a lenient one decodes the rest."""
    jpeg = _pil_jpeg(pixels)
    offset, marker, length = _segments(jpeg)[0]
    if marker != 0xE0:
        raise ValueError("no APP0 (JFIF) segment first")
    end = offset + 2 + length
    return jpeg[:end] + b"\xff\x00\x00\x04\xaa\xbb" + jpeg[end:]


def cut_scan(pixels: np.ndarray) -> bytes:
    """The scan cut after a third of its data, then EOI: a lenient reader fills the rest grey."""
    jpeg = _pil_jpeg(pixels)
    start = _scan_data(jpeg)
    return jpeg[: start + (len(jpeg) - start) // 3] + EOI


def random_scan(pixels: np.ndarray, seed: int = 0) -> bytes:
    """The scan's data replaced by random bytes (no 0xFF), then EOI."""
    jpeg = _pil_jpeg(pixels)
    start = _scan_data(jpeg)
    noise = np.random.default_rng(seed).integers(0, 255, len(jpeg) - start - 2, dtype=np.uint8)
    return jpeg[:start] + bytes(noise) + EOI


def restarts_out_of_order(pixels: np.ndarray) -> bytes:
    """A JPEG with a restart marker after every MCU whose first two (RST0, RST1) are swapped."""
    jpeg = bytearray(_pil_jpeg(pixels, restart_marker_blocks=1))
    first, second = jpeg.index(b"\xff\xd0"), jpeg.index(b"\xff\xd1")
    jpeg[first + 1], jpeg[second + 1] = 0xD1, 0xD0
    return bytes(jpeg)


def hidden_frame_header(pixels: np.ndarray, side: int = 16000) -> bytes:
    """A progressive frame header of ``side`` x ``side`` (3 components) hidden behind ``FF 00``
    and a length that skips it: a parser that reads ``FF 00`` as a marker segment skips to the
    real frame header and believes the small size; libjpeg reads ``FF 00`` as stuffing and then
    the large header."""
    jpeg = _pil_jpeg(pixels)
    sof = b"\xff\xc2" + struct.pack(">HBHHB", 17, 8, side, side, 3)
    sof += b"".join(bytes([c, 0x11, 0]) for c in (1, 2, 3))
    hidden = b"\xff\x00" + struct.pack(">H", 2 + len(sof)) + sof
    return SOI + hidden + jpeg[2:]


def empty_scans(pixels: np.ndarray, scans: int = 10_000) -> bytes:
    """A progressive JPEG followed by ``scans`` further AC scans of its first component, each a
    valid "first" scan of coefficients 1-63 (Ah = Al = 0, which libjpeg accepts without a
    warning after the bands were refined to full precision) holding one end-of-band run over
    every block: a few bytes each, and each makes the decoder pass over the whole image."""
    height, width = pixels.shape[:2]
    jpeg = _pil_jpeg(pixels, progressive=True)
    blocks = -(-height // 8) * -(-width // 8)  # the first component is not subsampled
    run = blocks.bit_length() - 1  # EOBr covers 2**r + (r extra bits) blocks
    if not 0 < run <= 14:
        raise ValueError(f"{blocks} blocks need more than one end-of-band run")
    # a Huffman table for AC table 0 with one symbol, EOBr, coded as '0'
    table = b"\x10" + bytes([1] + [0] * 15) + bytes([run << 4])
    dht = b"\xff\xc4" + struct.pack(">H", 2 + len(table)) + table
    bits = "0" + format(blocks - (1 << run), f"0{run}b")
    bits += "1" * (-len(bits) % 8)
    data = int(bits, 2).to_bytes(len(bits) // 8, "big")
    sos = b"\xff\xda" + struct.pack(">HB", 8, 1) + b"\x01\x00" + bytes([1, 63, 0])
    return jpeg[:-2] + dht + (sos + data) * scans + EOI


KINDS = {
    "stray bytes after APP0": stray_bytes,
    "a cut scan": cut_scan,
    "a random scan": random_scan,
    "restart markers out of order": restarts_out_of_order,
    "a hidden frame header": hidden_frame_header,
    "10,000 empty scans": empty_scans,
}
