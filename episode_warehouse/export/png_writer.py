"""Write episode frames as PNG files in worker processes: the part of an export that parallelizes.

lerobot's writer takes an image column as a list of PNG paths (it embeds the files' bytes in
its parquet and samples them for statistics). Encoding those PNGs is the CPU-heavy part of a
lossless export, and it does not depend on the episode before, so ``PngWriters`` runs it in
plain worker processes (numpy and Pillow only: they start in a fraction of a second) while the
calling process hands finished episodes to lerobot. A worker reads its frames straight from
the TED's ``.npy`` file, so only a one-line job crosses the pipe.

The files are what lerobot's ``add_frame`` writes for the same frame: ``PIL.Image.fromarray``
of the HWC uint8 array saved with the same ``compress_level`` (tests compare the datasets byte
for byte).

Protocol: one JSON job per line on stdin, one answer per line on stdout: ``ok`` or
``error <message>``.
"""

from __future__ import annotations

import json
import logging
import queue
import subprocess
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import PIL.Image

from episode_warehouse.errors import ExportError

log = logging.getLogger(__name__)

GRAY = "gray"  # (N, H, W) frames, written as RGB with the gray value in all three channels
CHW = "chw"  # (N, C, H, W) frames, written as HWC


def to_hwc(frames: np.ndarray, layout: str) -> np.ndarray:
    """TED image rows as the (N, H, W, 3) uint8 arrays LeRobot's image features hold."""
    if layout == GRAY:
        return np.repeat(frames[..., None], 3, axis=-1)
    if layout == CHW:
        return frames.transpose(0, 2, 3, 1)
    raise ValueError(f"unknown image layout {layout!r}")


def write_pngs(job: dict) -> None:
    """Write rows ``[start, start + length)`` of ``job["file"]`` as PNG files in ``job["dir"]``.

    Row ``start + i`` is frame ``job["first_frame"] + i`` of its episode, named by
    ``job["pattern"].format(frame_index=...)``.
    """
    frames = np.load(job["file"], mmap_mode="r")
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
        subject=job["file"],
        fix="check that the TED folder is complete (re-materialize its partition)",
    )


class PngWriters:
    """``count`` worker processes writing PNG jobs; ``submit`` returns a future per job.

    Use as a context manager: the workers stop (or are killed) on exit.
    """

    def __init__(self, count: int) -> None:
        self.count = max(1, count)
        self._idle: queue.Queue[subprocess.Popen] = queue.Queue()
        self._procs = [
            subprocess.Popen(
                [sys.executable, "-m", __name__],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            for _ in range(self.count)
        ]
        for proc in self._procs:
            self._idle.put(proc)
        self._threads = ThreadPoolExecutor(self.count, thread_name_prefix="png-writer")

    def submit(self, job: dict) -> Future:
        return self._threads.submit(self._run, job)

    def finish(self, jobs: list[dict], futures: list[Future]) -> None:
        """Return once ``jobs`` are written: those no worker has started yet are written here,
        last first, rather than waited for (the caller has nothing else to do meanwhile).
        """
        for job, future in reversed(list(zip(jobs, futures, strict=True))):
            if future.cancel():
                try:
                    write_pngs(job)
                except (OSError, ValueError) as exc:
                    raise _failed(job, f"{type(exc).__name__}: {exc}") from exc
        for future in futures:
            if not future.cancelled():
                future.result()

    def _run(self, job: dict) -> None:
        proc = self._idle.get()
        try:
            proc.stdin.write(json.dumps(job) + "\n")
            proc.stdin.flush()
            answer = proc.stdout.readline().rstrip("\n")
        except BrokenPipeError:
            answer = ""
        finally:
            self._idle.put(proc)
        if answer != "ok":
            raise _failed(job, answer.removeprefix("error ") or "the worker process exited")

    def __enter__(self) -> PngWriters:
        return self

    def __exit__(self, *exc: object) -> None:
        self._threads.shutdown(wait=True, cancel_futures=True)
        for proc in self._procs:
            if proc.stdin and not proc.stdin.closed:
                proc.stdin.close()
        for proc in self._procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stdout:
                proc.stdout.close()


def _serve() -> None:
    for line in sys.stdin:
        job = json.loads(line)
        try:
            write_pngs(job)
            answer = "ok"
        except (OSError, ValueError) as exc:
            answer = f"error {type(exc).__name__}: {exc}".replace("\n", " ")
        # the worker protocol: one answer line per job on stdout
        sys.stdout.write(answer + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    _serve()
