"""Decode one RL Unplugged Atari run (its ``run_<run>-NNNNN-of-MMMMM`` files) into decoded episodes.

Two passes over the files, each file in a worker process (the pool of ``workers.py``), so both
cores decode PNGs and memory stays at one chunk of frames per worker whatever the file size:

1. **scan**: each file is inflated and its records checked and parsed; the small per-step values
   (actions, rewards, discounts) and each episode's length come back. The episodes' rows in the
   output follow from those lengths (files in checkpoint order, records in file order).
2. **frames**: each file is read again and its PNG frames decoded, in chunks, straight into the
   rows the scan assigned (``pwrite``): frames 0..N-2 of an episode are its steps' observations,
   frame N-1 (the observation after its last step) goes to the episode's row of
   ``final/observation``.

A record with a single observation has no transition: it is counted (``single_step_records``
in meta.json) and left out.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from episode_warehouse.atari.rlu_episode import FRAME_SHAPE, decode_frames, parse_record
from episode_warehouse.decoded import ArraySpec, DecodedWriter
from episode_warehouse.decoded.format import episode_table
from episode_warehouse.errors import CorruptInputError
from episode_warehouse.tfrecord.records import iter_gzip_records
from episode_warehouse.workers import WorkerPool

log = logging.getLogger(__name__)
CHUNK_FRAMES = 2048  # 14 MB of 84x84 frames per write
FRAME_BYTES = FRAME_SHAPE[0] * FRAME_SHAPE[1]


@dataclass(frozen=True)
class RluSource:
    """Where a worker reads one file: a local path, or a blob of a store (streaming mode)."""

    name: str  # the file name, for errors and source_files
    path: str = ""  # local file
    store_url: str = ""  # or: a store (gs://...) and the blob's name and generation
    endpoint: str | None = None
    blob: str = ""
    size: int = 0
    generation: str = ""

    def open(self):
        if self.path:
            return open(self.path, "rb")  # noqa: SIM115 - the caller closes it
        from episode_warehouse.blobstore import BlobInfo, open_blob_store

        store = open_blob_store(self.store_url, endpoint=self.endpoint)
        return store.open(BlobInfo(self.blob, self.size, "", self.generation))


@dataclass
class FileScan:
    """What pass 1 learnt of one file: per kept episode its values, in record order."""

    lengths: list[int] = field(default_factory=list)  # TED steps (N - 1) per kept episode
    terminal: list[bool] = field(default_factory=list)
    checkpoint_idx: list[int] = field(default_factory=list)
    episode_idx: list[int] = field(default_factory=list)
    recorded_return: list[float] = field(default_factory=list)
    actions: list[np.ndarray] = field(default_factory=list)
    rewards: list[np.ndarray] = field(default_factory=list)
    clipped: list[np.ndarray] = field(default_factory=list)
    single_step_records: int = 0


def scan_file(source: RluSource, max_record_bytes: int) -> FileScan:
    """Pass 1 for one file (runs in a worker)."""
    scan = FileScan()
    with source.open() as fh:
        for offset, data in iter_gzip_records(fh, source.name, max_record_bytes=max_record_bytes):
            record = parse_record(data, f"{source.name} record at byte {offset}")
            if record.steps == 1:
                scan.single_step_records += 1
                continue
            n = record.steps - 1
            scan.lengths.append(n)
            scan.terminal.append(record.terminal)
            scan.checkpoint_idx.append(record.checkpoint_idx)
            scan.episode_idx.append(record.episode_idx)
            scan.recorded_return.append(record.episode_return)
            scan.actions.append(record.actions[:n].astype(np.int32))
            scan.rewards.append(record.rewards[:n])
            scan.clipped.append(record.clipped_rewards[:n])
    return scan


def _npy_data_offset(path: Path) -> int:
    with open(path, "rb") as fh:
        version = np.lib.format.read_magic(fh)
        if version == (1, 0):
            np.lib.format.read_array_header_1_0(fh)
        else:
            np.lib.format.read_array_header_2_0(fh)
        return fh.tell()


def _pwrite(fd: int, data: memoryview, offset: int) -> None:
    while data:
        written = os.pwrite(fd, data, offset)
        data, offset = data[written:], offset + written


def fill_frames(
    source: RluSource,
    first_row: int,
    first_episode: int,
    lengths: list[int],
    frames_path: str,
    final_path: str,
    max_record_bytes: int,
) -> int:
    """Pass 2 for one file (runs in a worker): decode its frames into their rows; returns the
    frames written. ``lengths`` are the scan's, checked again record by record."""
    import cv2

    cv2.setNumThreads(1)
    frames_fd = os.open(frames_path, os.O_WRONLY)
    final_fd = os.open(final_path, os.O_WRONLY)
    frames_base = _npy_data_offset(Path(frames_path))
    final_base = _npy_data_offset(Path(final_path))
    buf = np.empty((CHUNK_FRAMES, *FRAME_SHAPE), dtype=np.uint8)
    row, kept, written = first_row, 0, 0
    try:
        with source.open() as fh:
            for offset, data in iter_gzip_records(
                fh, source.name, max_record_bytes=max_record_bytes
            ):
                where = f"{source.name} record at byte {offset}"
                record = parse_record(data, where)
                if record.steps == 1:
                    continue
                if kept >= len(lengths) or record.steps - 1 != lengths[kept]:
                    raise CorruptInputError(
                        f"{where}: the file changed between the two passes",
                        fix="re-materialize the raw stage (the file is not the one listed)",
                    )
                pngs = record.pngs
                for start in range(0, len(pngs), CHUNK_FRAMES):
                    chunk = pngs[start : start + CHUNK_FRAMES]
                    decode_frames(chunk, buf, where, start)
                    steps = min(len(chunk), record.steps - 1 - start)  # frames of steps
                    if steps > 0:
                        _pwrite(
                            frames_fd,
                            memoryview(buf[:steps]).cast("B"),
                            frames_base + (row + start) * FRAME_BYTES,
                        )
                    if steps < len(chunk):  # the last frame: after the episode's last step
                        _pwrite(
                            final_fd,
                            memoryview(buf[steps]).cast("B"),
                            final_base + (first_episode + kept) * FRAME_BYTES,
                        )
                row += record.steps - 1
                written += record.steps
                kept += 1
    finally:
        os.close(frames_fd)
        os.close(final_fd)
    if kept != len(lengths):
        raise CorruptInputError(
            f"{source.name}: {kept} episodes on the second pass, {len(lengths)} on the first",
            fix="re-materialize the raw stage (the file is not the one listed)",
        )
    return written


def decode_rlu_run(
    sources: list[RluSource],
    staging: Path,
    *,
    workers: int = 2,
    file_prefix: str = "",
    lineage: dict | None = None,
    max_record_bytes: int = 4 << 30,
) -> dict:
    """Decode the files ``sources`` (in checkpoint order) into the folder ``staging``.

    Returns:
        The meta.json written (rows, episodes, single-step records).

    Raises:
        CorruptInputError: a bad checksum, record, feature or frame (named with the file and
            the record's byte offset), or a run without any transition.
    """
    started = time.perf_counter()
    processes = min(workers, len(sources)) if workers > 1 else 0
    with WorkerPool(processes, what="RL Unplugged decode") as pool:
        scans = list(pool.map(scan_file, [(s, max_record_bytes) for s in sources]))
        lengths = [n for scan in scans for n in scan.lengths]
        rows, episodes = sum(lengths), len(lengths)
        if not episodes:
            raise CorruptInputError(
                "the files hold no episode with a transition (every record has one step)",
                subject=", ".join(s.name for s in sources) or "(no file)",
                fix="check ATARI_CHECKPOINTS and the source",
            )
        writer = DecodedWriter(staging)
        frames = writer.allocate(
            ArraySpec("observation", FRAME_SHAPE, "uint8", "observation"), rows
        )
        finals = writer.allocate(
            ArraySpec("final/observation", FRAME_SHAPE, "uint8", "final"), episodes
        )
        _put_steps(writer, scans)
        jobs, row, episode = [], 0, 0
        for source, scan in zip(sources, scans, strict=True):
            jobs.append(
                (source, row, episode, scan.lengths, str(frames), str(finals), max_record_bytes)
            )
            row += sum(scan.lengths)
            episode += len(scan.lengths)
        done = 0
        for i, count in enumerate(pool.map(fill_frames, jobs), 1):
            done += count
            log.info(
                "decoded frames of %s (%d/%d files, %d frames)",
                sources[i - 1].name,
                i,
                len(sources),
                done,
            )
    table = _episode_table(sources, scans, file_prefix)
    meta = writer.finish(
        table,
        {
            "format_source": "rl_unplugged",
            "files": [s.name for s in sources],
            "single_step_records": sum(s.single_step_records for s in scans),
            **(lineage or {}),
        },
    )
    seconds = time.perf_counter() - started
    log.info(
        "decoded %d steps in %d episodes in %.1f s (%.0f frames/s)",
        rows,
        episodes,
        seconds,
        (rows + episodes) / max(seconds, 1e-9),
    )
    return meta


def _put_steps(writer: DecodedWriter, scans: list[FileScan]) -> None:
    def cat(name: str, dtype) -> np.ndarray:
        parts = [a for scan in scans for a in getattr(scan, name)]
        return np.concatenate(parts).astype(dtype, copy=False)

    lengths = np.array([n for scan in scans for n in scan.lengths], dtype=np.int64)
    terminal = np.zeros(int(lengths.sum()), dtype=bool)
    ends = np.cumsum(lengths) - 1
    terminal[ends] = [t for scan in scans for t in scan.terminal]
    writer.put(ArraySpec("action", (), "int32", "step"), cat("actions", np.int32))
    writer.put(ArraySpec("reward", (), "float32", "reward"), cat("rewards", np.float32))
    writer.put(ArraySpec("clipped_reward", (), "float32", "next"), cat("clipped", np.float32))
    writer.put(ArraySpec("terminal", (), "bool", "terminal"), terminal)


def _episode_table(sources: list[RluSource], scans: list[FileScan], prefix: str) -> pa.Table:
    lengths = np.array([n for scan in scans for n in scan.lengths], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    terminated = np.array([t for scan in scans for t in scan.terminal], dtype=bool)
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
            "complete": terminated,
            "language_instruction": pa.nulls(n, pa.string()),
            "source_files": files,
            "checkpoint_idx": np.array([c for s in scans for c in s.checkpoint_idx], np.int64),
            "episode_idx": np.array([e for s in scans for e in s.episode_idx], np.int64),
            "recorded_return": np.array([r for s in scans for r in s.recorded_return]),
        }
    )
