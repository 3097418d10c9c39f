"""Frames of a LeRobot ``video`` feature, resolved as lerobot resolves them, read sequentially.

lerobot 0.6.1 (torchcodec backend) maps a frame's query time ``from_timestamp + timestamp`` of
its episode to the frame index ``round(t * average_fps)`` of the video file and accepts the
decoded frame when its presentation time is within ``tolerance_s`` (1e-4 s) of the query. We
compute the same indices for a whole episode and decode them in forward passes
(``get_frames_in_range``), never frame by frame with seeks, one bounded run at a time: a run
holds at most ``RUN_FRAMES`` frames and never spans a gap between the frames the rows name, so
memory follows the rows, not their time span (five rows 600 s apart in a static video decoded
the whole span at once: 2.3 GB). Each video file is opened once while its episodes are read.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from episode_warehouse.errors import CorruptInputError

TOLERANCE_S = 1e-4  # LeRobotDataset's default
RUN_FRAMES = 64  # frames one decoding call returns at most


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
        out: np.ndarray | None = None
        pts = np.empty(len(index), np.float64)
        for rows in _runs(index):
            lo, hi = int(index[rows[0]]), int(index[rows[-1]]) + 1
            try:
                batch = decoder.get_frames_in_range(lo, hi)
            except (RuntimeError, IndexError, ValueError) as exc:
                raise CorruptInputError(
                    f"frames {lo}..{hi - 1} of {self.key} do not decode "
                    f"({str(exc).splitlines()[0]})",
                    subject=str(path),
                    fix="download the dataset again (the file is truncated or corrupt)",
                ) from None
            data = batch.data.numpy()
            if out is None:
                out = np.empty((len(index), *data.shape[1:]), data.dtype)
            out[rows] = data[index[rows] - lo]
            pts[rows] = batch.pts_seconds.numpy()[index[rows] - lo]
        late = np.abs(pts - query) >= TOLERANCE_S
        if late.any():
            i = int(np.argmax(late))
            raise CorruptInputError(
                f"{self.key}: the frame for t={query[i]:.4f} s is at {pts[i]:.4f} s (beyond "
                f"lerobot's tolerance of {TOLERANCE_S} s)",
                subject=str(path),
                fix="the video and the data disagree in time; re-encode the dataset with lerobot",
            )
        if out is None:
            raise CorruptInputError(
                f"an episode of {self.key} has no frame", subject=str(path), fix="check the data"
            )
        return out, index


def _runs(index: np.ndarray) -> list[np.ndarray]:
    """Positions of ``index`` grouped into decoding runs: sorted by frame, a new run wherever
    frames are not consecutive (a repeated frame stays in its run) or a run reaches
    ``RUN_FRAMES`` frames."""
    order = np.argsort(index, kind="stable")
    frames = index[order]
    runs, start = [], 0
    for i in range(1, len(frames) + 1):
        if (
            i == len(frames)
            or frames[i] - frames[i - 1] > 1
            or frames[i] - frames[start] >= RUN_FRAMES
        ):
            runs.append(order[start:i])
            start = i
    return runs
