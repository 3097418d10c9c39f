"""A camera frame of a TED row as the frame request's answer: the bytes stored, where the camera
keeps the source's JPEG or PNG (served as they are, nothing encoded per request), else a
lossless PNG of the row.

The PNG holds the row's bytes as they are: a grey ``(H, W)`` frame as one-channel ``L``, a
``(C, H, W)`` frame as ``L``, ``RGB`` or ``RGBA`` by its channel count. Decoding it gives the TED's
row back exactly (tests compare the pixels a browser draws with the TED).

A depth frame (``DEPTH``: ``(1, H, W)`` uint16 or float32) is drawn as grey, near dark and far
light, its finite values stretched from the frame's own minimum to its maximum; a missing
reading (NaN, infinity) is black. The values themselves are in the episode's data, not here.
"""

from __future__ import annotations

import io

import numpy as np
import PIL.Image
import torch

from episode_warehouse.decoded.format import CHW, DEPTH, GRAY
from episode_warehouse.frames.codec import codec_of
from episode_warehouse.frames.tensor import rows_of

CHANNELS = (1, 3, 4)  # PIL's L, RGB and RGBA: the modes a uint8 array maps to
COMPRESS_LEVEL = 1  # fast: a frame is encoded when it is asked for


def stored_image(column: torch.Tensor, step: int, layout: str) -> tuple[bytes, str] | None:
    """Frame ``step`` of a camera's ``column`` as the JPEG or PNG bytes the source published
    and the TED stores (with their media type), or None where the camera keeps no such bytes
    (pixels compressed with zstd, a video, a depth camera: drawn, not served as stored).

    The bytes are served only after they decode by the codec table's rule (strictly, to the
    camera's row), as every loader decodes them: a browser's or Rerun's lenient decoder never
    shows a frame the loaders refuse.

    Raises:
        CorruptInputError: the stored frame is not accepted (naming its row).
    """
    blob = rows_of(column).blob(step) if layout != DEPTH else None
    if blob is not None:
        codec = codec_of(blob)
        if codec is not None and codec.media_type is not None:
            column[step]  # the rule: accepted and decoded, or refused
            return blob, codec.media_type
    return None


def frame_answer(column: torch.Tensor, step: int, layout: str) -> tuple[bytes, str]:
    """The bytes and media type of frame ``step`` of a camera's ``column``: its stored JPEG or
    PNG as it is (:func:`stored_image`), else :func:`frame_png` of its row."""
    stored = stored_image(column, step, layout)
    if stored is not None:
        return stored
    return frame_png(column[step].numpy(), layout), "image/png"


def frame_png(frame: np.ndarray, layout: str) -> bytes:
    """PNG bytes of one frame (``layout``: ``GRAY`` for ``(H, W)``, ``CHW`` for ``(C, H, W)``)."""
    if layout == GRAY:
        image = np.ascontiguousarray(frame)
    elif layout == DEPTH:
        image = depth_grey(frame[0])
    elif layout == CHW:
        channels = frame.shape[0]
        if channels not in CHANNELS:
            raise ValueError(f"a frame of {channels} channels has no PNG mode (1, 3 or 4)")
        hwc = frame.transpose(1, 2, 0)
        image = np.ascontiguousarray(hwc[..., 0] if channels == 1 else hwc)
    else:
        raise ValueError(f"unknown image layout {layout!r}")
    out = io.BytesIO()
    PIL.Image.fromarray(image).save(out, format="PNG", compress_level=COMPRESS_LEVEL)
    return out.getvalue()


def depth_grey(depth: np.ndarray) -> np.ndarray:
    """An (H, W) depth map as 8-bit grey: finite values stretched over 1..255 from the map's
    own minimum to its maximum (a flat map is mid-grey), missing readings 0."""
    values = depth.astype(np.float64)
    finite = np.isfinite(values)
    out = np.zeros(values.shape, dtype=np.uint8)
    if not finite.any():
        return out
    lo, hi = values[finite].min(), values[finite].max()
    if hi == lo:
        out[finite] = 128
        return out
    out[finite] = np.rint(1 + (values[finite] - lo) * (254 / (hi - lo))).astype(np.uint8)
    return out
