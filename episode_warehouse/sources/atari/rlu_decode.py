"""Decode one RL Unplugged Atari run (its ``run_<run>-NNNNN-of-MMMMM`` files) into decoded episodes.

Two passes over the files, each file in a worker process (the pool of ``workers.py``), so both
cores decode PNGs and memory stays at one chunk of frames per worker whatever the file size:

1. **scan**: each file is inflated and its records checked and parsed; the small per-step values
   (actions, rewards, discounts) and each episode's length come back. The episodes' rows in the
   output follow from those lengths (files in checkpoint order, records in file order).
2. **frames**: each file is read again and its PNG frames decoded, in chunks, straight into the
   rows the scan assigned (``pwrite``).

A record of N rows is N steps (``rlu_episode.py``): row i's frame, action and reward. The
observation after the last step was never logged, so ``("next", "observation")`` reads zeros
there, as for Dopamine's checkpoints. An episode ends terminated when the logger marked its last
row (discount 0), unless it hit the time limit (``time_limit.py``: truncated); an episode whose
last discount is 1 was cut by the end of its checkpoint file: truncated.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from episode_warehouse.decoded import ArraySpec, DecodedWriter
from episode_warehouse.decoded.format import GRAY, episode_table
from episode_warehouse.decoded.record import DecodedRecord
from episode_warehouse.errors import CorruptInputError
from episode_warehouse.limits import InputLimits
from episode_warehouse.progress import progress
from episode_warehouse.sources.atari.rlu_episode import FRAME_SHAPE
from episode_warehouse.sources.atari.rlu_worker import FileScan, fill_frames, scan_file
from episode_warehouse.sources.atari.time_limit import hit_time_limit
from episode_warehouse.sources.source_file import SourceFile
from episode_warehouse.workers import WorkerPool

log = logging.getLogger(__name__)


def decode_rlu_run(
    sources: list[SourceFile],
    staging: Path,
    *,
    workers: int = 2,
    file_prefix: str = "",
    lineage: dict | None = None,
    max_record_bytes: int = InputLimits.max_record_bytes,
) -> DecodedRecord:
    """Decode the files ``sources`` (in checkpoint order) into the folder ``staging``.

    Returns:
        The meta.json written (rows, episodes, time-limited episodes).

    Raises:
        CorruptInputError: a bad checksum, record, feature or frame (named with the file and
            the record's byte offset), or a run without any transition.
    """
    started = time.perf_counter()
    processes = min(workers, len(sources)) if workers > 1 else 0
    with WorkerPool(processes, what="RL Unplugged decode") as pool:
        with progress("reading episodes", len(sources), "files") as bar:
            scans = []
            for scan in pool.map(scan_file, [(s, max_record_bytes) for s in sources]):
                scans.append(scan)
                bar.update()
        lengths = [n for scan in scans for n in scan.lengths]
        rows, episodes = sum(lengths), len(lengths)
        if not episodes:
            raise CorruptInputError(
                "the files hold no episode",
                subject=", ".join(s.name for s in sources) or "(no file)",
                fix="check ATARI_CHECKPOINTS and the source",
            )
        writer = DecodedWriter(staging)
        frames = writer.allocate(
            ArraySpec("observation", FRAME_SHAPE, "uint8", "observation"), rows, camera=True
        )
        terminated = _terminated(scans)
        _put_steps(writer, scans, terminated)
        jobs, row = [], 0
        for source, scan in zip(sources, scans, strict=True):
            jobs.append((source, row, scan.lengths, str(frames), max_record_bytes))
            row += sum(scan.lengths)
        with progress("decoding frames", rows, "frames") as bar:
            for count in pool.map(fill_frames, jobs):
                bar.update(count)
    table = _episode_table(sources, scans, file_prefix, terminated)
    ended = np.array([e for scan in scans for e in scan.ended], dtype=bool)
    meta = writer.finish(
        table,
        {
            "images": {"observation": GRAY},  # the 84x84 grey screen: the one camera
            "format_source": "rl_unplugged",
            "files": [s.name for s in sources],
            "time_limited_episodes": int((ended & ~terminated).sum()),
            **(lineage or {}),
        },
    )
    seconds = time.perf_counter() - started
    log.info(
        "decoded %d steps in %d episodes in %.1f s (%.0f frames/s)",
        rows,
        episodes,
        seconds,
        rows / max(seconds, 1e-9),
    )
    return meta


def _terminated(scans: list[FileScan]) -> np.ndarray:
    """Per episode: the logger's terminal mark, less the episodes cut by the time limit."""
    lengths = np.array([n for scan in scans for n in scan.lengths], dtype=np.int64)
    ended = np.array([e for scan in scans for e in scan.ended], dtype=bool)
    return ended & ~hit_time_limit(lengths, np.ones(len(lengths), bool), ended)


def _put_steps(writer: DecodedWriter, scans: list[FileScan], terminated: np.ndarray) -> None:
    def cat(name: str, dtype) -> np.ndarray:
        parts = [a for scan in scans for a in getattr(scan, name)]
        return np.concatenate(parts).astype(dtype, copy=False)

    lengths = np.array([n for scan in scans for n in scan.lengths], dtype=np.int64)
    terminal = np.zeros(int(lengths.sum()), dtype=bool)
    terminal[np.cumsum(lengths) - 1] = terminated
    writer.put(ArraySpec("action", (), "int32", "step"), cat("actions", np.int32))
    writer.put(ArraySpec("reward", (), "float32", "reward"), cat("rewards", np.float32))
    writer.put(ArraySpec("terminal", (), "bool", "terminal"), terminal)


def _episode_table(
    sources: list[SourceFile], scans: list[FileScan], prefix: str, terminated: np.ndarray
) -> pa.Table:
    lengths = np.array([n for scan in scans for n in scan.lengths], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    returns = np.array([float(r.astype(np.float64).sum()) for scan in scans for r in scan.rewards])
    files = [
        [prefix + s.name] for s, scan in zip(sources, scans, strict=True) for _ in scan.lengths
    ]
    n = len(lengths)
    return episode_table(
        {
            "episode": np.arange(n, dtype=np.int64),
            "start": starts,
            "length": lengths,
            "return": returns,
            "terminated": terminated,
            "truncated": ~terminated,
            "true_start": np.ones(n, dtype=bool),
            "complete": np.array([e for scan in scans for e in scan.ended], dtype=bool),
            "language_instruction": pa.nulls(n, pa.string()),
            "source_files": files,
            "checkpoint_idx": np.array([c for s in scans for c in s.checkpoint_idx], np.int64),
            "episode_idx": np.array([e for s in scans for e in s.episode_idx], np.int64),
            "recorded_return": np.array([r for s in scans for r in s.recorded_return]),
        }
    )
