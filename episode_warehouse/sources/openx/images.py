"""Camera images of both OpenX layouts, through the codec table's one acceptance rule
(:mod:`episode_warehouse.frames.codec`): the header read as the decoder reads it and checked
against the pixel limit before anything is decoded, then decoded by the decoder every reader
uses (libjpeg-turbo, strict, for JPEG; libpng, at the PNG's own bit depth, for PNG) to
(channels, height, width). A frame the loaders would refuse is refused here."""

from __future__ import annotations

import numpy as np

from episode_warehouse.errors import LimitExceededError
from episode_warehouse.frames.codec import declared, decode_published
from episode_warehouse.limits import LIMITS_FIX as _LIMITS_FIX
from episode_warehouse.limits import InputLimits


def checked_image_size(data: bytes, subject: str, limits: InputLimits) -> tuple[int, int, int]:
    """(channels, height, width) of an encoded image from its header; checks the pixel limit.

    Raises:
        CorruptInputError: not a JPEG or PNG, or a header its decoder refuses.
        LimitExceededError: more pixels than the limit.
    """
    info = declared(data, subject)
    if info.width * info.height > limits.max_image_pixels:
        raise LimitExceededError(
            f"the image declares {info.width}x{info.height} pixels, over the limit of "
            f"{limits.max_image_pixels}",
            subject=subject,
            fix=_LIMITS_FIX,
        )
    return info.row()


def decode_image_bytes(data: bytes, subject: str, limits: InputLimits) -> np.ndarray:
    """The pixels of a published frame, (channels, height, width) of its own dtype."""
    return decode_published(data, subject, limits.max_image_pixels)
