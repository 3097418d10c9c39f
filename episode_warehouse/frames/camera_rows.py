"""What a decoder hands the decoded writer for one camera: the decoded pixels (checked: they
decode, and to the camera's shape) and, where the source published them, each frame's encoded
bytes, kept as they are when frames are stored encoded."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class CameraRows:
    """``pixels``: (rows, ...) as the decoded layout keeps them. ``blobs``: per row, the
    source's JPEG or PNG bytes that :func:`~episode_warehouse.frames.codec.decode_frame` turns
    into exactly that row, or None where the row has none (a raw frame, or one the decoder
    converted, such as grey repeated to RGB): those rows are compressed losslessly. Without
    ``blobs`` every row is.

    A video camera (LeRobot v3) gives ``refs`` instead: per row, the video file's name (a
    relative path, the key of ``videos``) and the index of the frame in it that decodes to the
    row; ``videos`` names the files (name -> where the file is now): they are kept beside the
    frames, and a row is stored as a reference, decoded from the video where it is read."""

    pixels: np.ndarray
    blobs: Sequence[bytes | None] | None = None
    refs: Sequence[tuple[str, int]] | None = None
    videos: Mapping[str, Path] | None = None

    def __len__(self) -> int:
        return len(self.pixels)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.pixels.shape

    @property
    def dtype(self) -> np.dtype:
        return self.pixels.dtype

    def blob(self, row: int) -> bytes | None:
        return None if self.blobs is None else self.blobs[row]
