"""Image leaves as Minari stores them: JPEG bytes per frame (``jpeg_encoding``, Minari's default
since 0.5), or raw uint8 arrays (datasets written without it). A frame is accepted and decoded
by the codec table's rule (:mod:`episode_warehouse.frames.codec`), as every reader of the stored
frame will: its header, read by its decoder, declares the space's shape before it is decoded.
The pixels are Minari's own (``np.array(PIL.Image.open(...), dtype=np.uint8)``: libjpeg's
accurate IDCT, as libjpeg-turbo's here; tests compare them)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from episode_warehouse.errors import CorruptInputError
from episode_warehouse.frames.codec import declared, decode_frame
from episode_warehouse.sources.minari.spaces import Leaf

_FIX = "the dataset is malformed: download it again, or write it again with Minari"


def decode_frames(blobs: Sequence[bytes], leaf: Leaf, where: str) -> np.ndarray:
    """The frames of ``blobs`` (one encoded image each) as uint8 ``(N, *leaf.shape)``."""
    out = np.empty((len(blobs), *leaf.shape), dtype=np.uint8)
    channels = leaf.shape[2] if len(leaf.shape) == 3 else 1
    row = (channels, *leaf.shape[:2])
    for i, blob in enumerate(blobs):
        name = f"{where} frame {i}"
        info = declared(blob, name)
        if info.row() != row or info.dtype != np.uint8:
            raise CorruptInputError(
                f"frame {i} is not an image of the space's shape {leaf.shape} "
                f"(its header: {info.row()} {info.dtype})",
                subject=where,
                fix=_FIX,
            )
        pixels = decode_frame(blob, row, np.dtype(np.uint8), name)
        out[i] = np.moveaxis(pixels, 0, -1).reshape(leaf.shape)
    return out
