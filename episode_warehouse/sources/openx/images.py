"""Camera images of both OpenX layouts: size from the header (checked against the pixel limit
before anything is decoded), then decoded with torchvision (libjpeg's accurate integer IDCT for
JPEG, the PNG's own bit depth: uint8, or uint16 for depth maps) to (channels, height, width)."""

from __future__ import annotations

import numpy as np

from episode_warehouse.errors import CorruptInputError, LimitExceededError
from episode_warehouse.image_header import image_format, image_size
from episode_warehouse.limits import LIMITS_FIX as _LIMITS_FIX
from episode_warehouse.limits import InputLimits


def checked_image_size(data: bytes, subject: str, limits: InputLimits) -> tuple[int, int, int]:
    """(channels, height, width) of an encoded image from its header; checks the pixel limit."""
    found = image_format(data)
    if found not in ("jpeg", "png"):
        raise CorruptInputError(
            f"the image is {'a ' + found.upper() if found != 'unknown' else 'of no known format'}"
            ", not the JPEG or PNG a camera holds: refused before decoding",
            subject=subject,
            fix="re-encode the camera's frames as JPEG or PNG at the source (or re-download the "
            "shard if the bytes are corrupt)",
        )
    size = image_size(data)
    if size is None:
        raise CorruptInputError(
            f"the image's {found.upper()} header cannot be read",
            subject=subject,
            fix="re-download the shard; the image bytes are corrupt",
        )
    channels, height, width = size
    if width * height > limits.max_image_pixels:
        raise LimitExceededError(
            f"the image declares {width}x{height} pixels, over the limit of "
            f"{limits.max_image_pixels}",
            subject=subject,
            fix=_LIMITS_FIX,
        )
    return channels, height, width


def decode_image_bytes(data: bytes, subject: str) -> np.ndarray:
    import torch
    from torchvision.io import ImageReadMode, decode_image

    try:
        tensor = decode_image(
            torch.frombuffer(bytearray(data), dtype=torch.uint8), mode=ImageReadMode.UNCHANGED
        )
    except RuntimeError as exc:
        raise CorruptInputError(
            f"the image does not decode ({exc})",
            subject=subject,
            fix="re-download the shard; the image bytes are corrupt",
        ) from exc
    return tensor.numpy()
