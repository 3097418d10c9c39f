"""AV1 videos written as LeRobot writes its cameras: PyAV's ``libsvtav1`` encoder, yuv420p,
the encoder drained before the file is closed.

torchcodec's ``VideoEncoder`` with ``libsvtav1`` once hung a test worker in the encoder's
teardown (``svt_av1_enc_deinit`` waiting for a packet, a native wait that pytest's timeout
cannot interrupt); LeRobot's way drains every packet first (``encode(None)``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


def write_av1(frames: np.ndarray, path: Path, fps: int) -> Path:
    """uint8 RGB ``frames`` ([N, 3, H, W], or [N, H, W, 3] with ``channels_last``-shaped
    input detected by its last axis) encoded into the MP4 ``path``; returns ``path``."""
    import av

    frames = np.asarray(frames, dtype=np.uint8)
    if frames.ndim != 4 or 3 not in (frames.shape[1], frames.shape[-1]):
        raise ValueError(f"frames must be [N, 3, H, W] or [N, H, W, 3] RGB, not {frames.shape}")
    pixels = frames if frames.shape[-1] == 3 else frames.transpose(0, 2, 3, 1)
    height, width = pixels.shape[1:3]
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libsvtav1", rate=fps)
        if not isinstance(stream, av.VideoStream):
            raise TypeError(f"libsvtav1 made a {type(stream).__name__}")
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        for image in pixels:
            frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(image), format="rgb24")
            for packet in stream.encode(frame.reformat(format="yuv420p")):
                out.mux(packet)
        for packet in stream.encode(None):  # drained: the encoder's teardown waits for nothing
            out.mux(packet)
    return path
