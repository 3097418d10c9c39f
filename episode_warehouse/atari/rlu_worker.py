"""The two passes of RL Unplugged decoding that run in worker processes, one file per job.

Kept to light imports (numpy, OpenCV, protobuf): every worker of the pool imports this module.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from episode_warehouse.atari.rlu_episode import FRAME_SHAPE, decode_frames, parse_record
from episode_warehouse.errors import CorruptInputError
from episode_warehouse.tfrecord.records import iter_gzip_records

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
