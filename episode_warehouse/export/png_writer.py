"""Write episode frames as PNG files in worker processes: the part of an export that parallelizes.

lerobot's writer takes an image column as a list of PNG paths (it embeds the files' bytes in
its parquet and samples them for statistics). Encoding those PNGs is the CPU-heavy part of a
lossless export, and it does not depend on the episode before, so ``PngWriters`` runs it in the
worker pool (``episode_warehouse.workers``) while the calling process hands finished episodes
to lerobot. A worker reads its frames from the TED folder through the TED's own reader
(:class:`~episode_warehouse.ted.assemble.MappedRows`: raw, encoded and video cameras alike), so
only a small job dict crosses the pipe.

The files are what lerobot's ``add_frame`` writes for the same frame: ``PIL.Image.fromarray``
of the HWC uint8 array saved with the same ``compress_level`` (tests compare the datasets byte
for byte).
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import Future
from pathlib import Path

import numpy as np
import PIL.Image

# GRAY: (N, H, W) frames, written as RGB with the grey value in all three channels; CHW:
# (N, C, H, W) frames, written as HWC (one channel: as GRAY). The decoders declare them.
from episode_warehouse.decoded.format import CHW, GRAY
from episode_warehouse.errors import DiskFullError, ExportError, is_disk_full
from episode_warehouse.ted.assemble import MappedRows
from episode_warehouse.ted.files import read_meta
from episode_warehouse.workers import WorkerPool

log = logging.getLogger(__name__)

SCRATCH_SETTING = "EPISODE_WAREHOUSE_SCRATCH"
JOB_TIMEOUT_S = 600.0  # one job is at most CHUNK_FRAMES frames: seconds, not minutes


def to_hwc(frames: np.ndarray, layout: str) -> np.ndarray:
    """TED image rows as the (N, H, W, 3) uint8 arrays LeRobot's image features hold."""
    if layout == GRAY:
        return np.repeat(frames[..., None], 3, axis=-1)
    if layout == CHW:
        hwc = frames.transpose(0, 2, 3, 1)
        return np.repeat(hwc, 3, axis=-1) if hwc.shape[-1] == 1 else hwc
    raise ValueError(f"unknown image layout {layout!r}")


def write_pngs(job: dict) -> None:
    """Write rows ``[start, start + length)`` of ``job["file"]`` (a file of the TED folder
    ``job["ted"]``, read by the TED's reader) as PNG files in ``job["dir"]``.

    Row ``start + i`` is frame ``job["first_frame"] + i`` of its episode, named by
    ``job["pattern"].format(frame_index=...)``.
    """
    folder = Path(job["ted"])  # the TED's own reader: raw, encoded and video cameras alike
    frames = MappedRows(folder, read_meta(folder)).file_rows(job["file"])
    rows = to_hwc(np.asarray(frames[job["start"] : job["start"] + job["length"]]), job["layout"])
    out = Path(job["dir"])
    out.mkdir(parents=True, exist_ok=True)
    for i, image in enumerate(rows):
        path = out / job["pattern"].format(frame_index=job["first_frame"] + i)
        PIL.Image.fromarray(np.ascontiguousarray(image)).save(
            path, compress_level=job["compress_level"]
        )


def _failed(job: dict, why: str) -> ExportError:
    return ExportError(
        f"writing PNG frames failed: {why}",
        subject=f"{job['ted']}/{job['file']}",
        fix="check that the TED folder is complete (re-materialize its partition)",
    )


def write_job(job: dict) -> None:
    """:func:`write_pngs` with its failures as the export's errors (run in a worker or here).

    Raises:
        DiskFullError: the scratch folder filled up (names the setting that moves it).
        ExportError: the frames cannot be read or written.
    """
    try:
        write_pngs(job)
    except OSError as exc:
        if is_disk_full(exc):
            raise DiskFullError(
                "the scratch space for PNG frames is full (nothing was published)",
                subject=job["dir"],
                fix=f"free space there, or set {SCRATCH_SETTING} to a folder on a larger disk",
            ) from None
        raise _failed(job, f"{type(exc).__name__}: {exc}") from None
    except ValueError as exc:
        raise _failed(job, f"{type(exc).__name__}: {exc}") from None


class PngWriters:
    """``count`` worker processes writing PNG jobs; ``submit`` returns a future per job.

    Use as a context manager: the workers stop (or are killed) on exit.
    """

    def __init__(self, count: int) -> None:
        self.count = max(1, count)
        self._pool = WorkerPool(self.count, timeout_s=JOB_TIMEOUT_S, what="PNG writer")

    def submit(self, job: dict) -> Future:
        return self._pool.submit(write_job, job)

    def finish(self, jobs: list[dict], futures: list[Future]) -> None:
        """Return once ``jobs`` are written: those no worker has started yet are written here,
        last first, rather than waited for (the caller has nothing else to do meanwhile).
        """
        started = time.monotonic()
        for job, future in reversed(list(zip(jobs, futures, strict=True))):
            if future.cancel():
                write_job(job)
        for future in futures:
            if not future.cancelled():
                self._pool.result(future, started)

    def __enter__(self) -> PngWriters:
        return self

    def __exit__(self, *exc: object) -> None:
        self._pool.__exit__(*exc)
