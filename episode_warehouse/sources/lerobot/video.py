"""Frames of a LeRobot ``video`` feature, resolved as lerobot resolves them.

lerobot 0.6.1 (torchcodec backend) maps a frame's query time ``from_timestamp + timestamp`` of
its episode to the frame index ``round(t * average_fps)`` of the video file and accepts the
decoded frame when its presentation time is within ``tolerance_s`` (1e-4 s) of the query. We
compute the same indices for a whole episode and decode them through the project's one video
wrapper (``frames/video.py``): in forward runs, a decoder per thread, a bounded number open.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from episode_warehouse.errors import CorruptInputError
from episode_warehouse.frames.video import decode_indices, thread_decoder
from episode_warehouse.sources.lerobot.layout import V30, Layout

TOLERANCE_S = 1e-4  # LeRobotDataset's default
_FIX = "download the dataset again (the file is truncated or corrupt)"


class VideoFrames:
    """The video files of one feature of a LeRobot dataset."""

    def __init__(self, folder: Path, key: str, layout: Layout = V30) -> None:
        self.folder, self.key, self.layout = folder, key, layout

    def path(self, chunk: int, file: int) -> Path:
        return self.layout.video_path(self.folder, self.key, chunk, file)

    def _open(self, path: Path):
        """This thread's decoder of ``path`` (opened once, kept among the process's few)."""
        return thread_decoder(self, str(path), lambda: self._new_decoder(path))

    def _new_decoder(self, path: Path):
        from torchcodec.decoders import VideoDecoder

        if not path.is_file():
            raise CorruptInputError(
                f"the video file of {self.key} is missing",
                subject=str(path),
                fix="download the dataset again",
            )
        try:
            return VideoDecoder(str(path))
        except (RuntimeError, ValueError) as exc:
            raise CorruptInputError(
                f"cannot open the video ({str(exc).splitlines()[0]})", subject=str(path), fix=_FIX
            ) from None

    def episode(
        self, chunk: int, file: int, from_s: float, timestamps: np.ndarray, episode: int = -1
    ) -> tuple[np.ndarray, np.ndarray]:
        """uint8 (N, C, H, W) frames of episode ``episode`` whose frames are at
        ``timestamps``, and their indices in the video file (what a reference to each names)."""
        path = self.path(chunk, file)
        decoder = self._open(path)
        query = from_s + timestamps.astype(np.float64)
        index = np.round(query * decoder.metadata.average_fps).astype(np.int64)
        if not len(index):
            raise CorruptInputError(
                f"an episode of {self.key} has no frame", subject=str(path), fix="check the data"
            )
        out, pts = decode_indices(decoder, index, f"{self.key} {path} (episode {episode})", _FIX)
        late = np.abs(pts - query) >= TOLERANCE_S
        if late.any():
            i = int(np.argmax(late))
            raise CorruptInputError(
                f"{self.key}, episode {episode}: the frame for t={query[i]:.4f} s is at "
                f"{pts[i]:.4f} s (beyond lerobot's tolerance of {TOLERANCE_S} s)",
                subject=str(path),
                fix="the video and the data disagree in time; re-encode the dataset with lerobot",
            )
        return out, index
