"""Frames of a LeRobot ``video`` feature, resolved as lerobot resolves them, read sequentially.

lerobot 0.6.1 (torchcodec backend) maps a frame's query time ``from_timestamp + timestamp`` of
its episode to the frame index ``round(t * average_fps)`` of the video file and accepts the
decoded frame when its presentation time is within ``tolerance_s`` (1e-4 s) of the query. We
compute the same indices for a whole episode and decode its range in one forward pass
(``get_frames_in_range``), never frame by frame with seeks; each video file is opened once while
its episodes are read.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from episode_warehouse.errors import CorruptInputError

TOLERANCE_S = 1e-4  # LeRobotDataset's default


class VideoFrames:
    """Decoders of one feature's video files, the current one kept open."""

    def __init__(self, folder: Path, key: str) -> None:
        self.folder, self.key = folder, key
        self._path: Path | None = None
        self._decoder = None

    def path(self, chunk: int, file: int) -> Path:
        return self.folder / "videos" / self.key / f"chunk-{chunk:03d}" / f"file-{file:03d}.mp4"

    def _open(self, path: Path):
        if path != self._path:
            from torchcodec.decoders import VideoDecoder

            if not path.is_file():
                raise CorruptInputError(
                    f"the video file of {self.key} is missing",
                    subject=str(path),
                    fix="download the dataset again",
                )
            try:
                self._decoder, self._path = VideoDecoder(str(path)), path
            except (RuntimeError, ValueError) as exc:
                raise CorruptInputError(
                    f"cannot open the video ({str(exc).splitlines()[0]})",
                    subject=str(path),
                    fix="download the dataset again (the file is truncated or corrupt)",
                ) from None
        return self._decoder

    def episode(
        self, chunk: int, file: int, from_s: float, timestamps: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """uint8 (N, C, H, W) frames of one episode whose frames are at ``timestamps``, and
        their indices in the video file (what a reference to each names)."""
        path = self.path(chunk, file)
        decoder = self._open(path)
        query = from_s + timestamps.astype(np.float64)
        index = np.round(query * decoder.metadata.average_fps).astype(np.int64)
        lo, hi = int(index.min()), int(index.max()) + 1
        try:
            batch = decoder.get_frames_in_range(lo, hi)
        except (RuntimeError, IndexError, ValueError) as exc:
            raise CorruptInputError(
                f"frames {lo}..{hi - 1} of {self.key} do not decode ({str(exc).splitlines()[0]})",
                subject=str(path),
                fix="download the dataset again (the file is truncated or corrupt)",
            ) from None
        pts = batch.pts_seconds.numpy()[index - lo]
        late = np.abs(pts - query) >= TOLERANCE_S
        if late.any():
            i = int(np.argmax(late))
            raise CorruptInputError(
                f"{self.key}: the frame for t={query[i]:.4f} s is at {pts[i]:.4f} s (beyond "
                f"lerobot's tolerance of {TOLERANCE_S} s)",
                subject=str(path),
                fix="the video and the data disagree in time; re-encode the dataset with lerobot",
            )
        return batch.data.numpy()[index - lo], index
