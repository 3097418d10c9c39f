"""Image leaves as Minari stores them: JPEG bytes per frame (``jpeg_encoding``, Minari's default
since 0.5) decoded as Minari decodes them (``np.array(PIL.Image.open(...), dtype=np.uint8)``),
or raw uint8 arrays (datasets written without it). A frame's declared size is checked against
the space before it is decoded."""

from __future__ import annotations

import io
from collections.abc import Sequence

import numpy as np

from episode_warehouse.errors import CorruptInputError
from episode_warehouse.image_header import image_size
from episode_warehouse.sources.minari.spaces import Leaf

_FIX = "the dataset is malformed: download it again, or write it again with Minari"


def decode_frames(blobs: Sequence[bytes], leaf: Leaf, where: str) -> np.ndarray:
    """The frames of ``blobs`` (one encoded image each) as uint8 ``(N, *leaf.shape)``."""
    from PIL import Image, UnidentifiedImageError

    out = np.empty((len(blobs), *leaf.shape), dtype=np.uint8)
    channels = leaf.shape[2] if len(leaf.shape) == 3 else 1
    for i, blob in enumerate(blobs):
        declared = image_size(bytes(blob))
        if declared is None or declared[1:] != leaf.shape[:2] or declared[0] != channels:
            raise CorruptInputError(
                f"frame {i} is not an image of the space's shape {leaf.shape} "
                f"(its header: {declared})",
                subject=where,
                fix=_FIX,
            )
        try:
            with Image.open(io.BytesIO(bytes(blob))) as image:
                out[i] = np.array(image, dtype=np.uint8).reshape(leaf.shape)
        except (UnidentifiedImageError, OSError, ValueError) as exc:
            raise CorruptInputError(
                f"frame {i} cannot be decoded ({exc})", subject=where, fix=_FIX
            ) from None
    return out
