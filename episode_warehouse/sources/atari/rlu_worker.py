"""The two passes of RL Unplugged decoding that run in worker processes, one file per job.

Kept to light imports (numpy, OpenCV, protobuf): every worker of the pool imports this module.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from episode_warehouse.errors import CorruptInputError
from episode_warehouse.sources.atari.rlu_episode import FRAME_SHAPE, decode_frames, parse_record
from episode_warehouse.sources.atari.rlu_files import parse_file_name
from episode_warehouse.sources.source_file import SourceFile
from episode_warehouse.tfrecord.records import iter_gzip_records

CHUNK_FRAMES = 2048  # 14 MB of 84x84 frames per write
FRAME_BYTES = FRAME_SHAPE[0] * FRAME_SHAPE[1]


@dataclass
class FileScan:
    """What pass 1 learnt of one file: per episode (record) its values, in record order."""

    lengths: list[int] = field(default_factory=list)  # N rows = N transitions per episode
    ended: list[bool] = field(default_factory=list)  # the logger marked the last row terminal
    checkpoint_idx: list[int] = field(default_factory=list)
    episode_idx: list[int] = field(default_factory=list)
    recorded_return: list[float] = field(default_factory=list)
    actions: list[np.ndarray] = field(default_factory=list)
    rewards: list[np.ndarray] = field(default_factory=list)


def _file_checkpoint(name: str) -> int | None:
    """The checkpoint a file holds by its name (``run_1-00007-of-00050``: 7), or None when the
    run is one file (``-of-00001``, as TFDS's own test files are): only a run split into
    several files is split by checkpoint ("Splits correspond to checkpoints of 1M steps")."""
    parsed = parse_file_name(name)
    if parsed is None or parsed[2] <= 1:
        return None
    return parsed[1]


def scan_file(source: SourceFile, max_record_bytes: int) -> FileScan:
    """Pass 1 for one file (runs in a worker).

    Raises:
        CorruptInputError: besides a bad record (see ``parse_record``), a record whose
            ``checkpoint_idx`` is not the file's checkpoint, or an ``episode_idx`` repeated
            within the file's checkpoint.
    """
    scan = FileScan()
    expected = _file_checkpoint(source.name)
    seen: set[tuple[int, int]] = set()
    with source.open() as fh:
        for offset, data in iter_gzip_records(fh, source.name, max_record_bytes=max_record_bytes):
            where = f"{source.name} record at byte {offset}"
            record = parse_record(data, where)
            where += f" (checkpoint {record.checkpoint_idx}, episode {record.episode_idx})"
            if expected is not None and record.checkpoint_idx != expected:
                raise CorruptInputError(
                    f"{where}: checkpoint_idx {record.checkpoint_idx} in the file of checkpoint "
                    f"{expected}",
                    fix="the file holds records of another checkpoint: re-download it",
                )
            ids = (record.checkpoint_idx, record.episode_idx)
            if ids in seen:
                raise CorruptInputError(
                    f"{where}: episode_idx {record.episode_idx} appears twice in checkpoint "
                    f"{record.checkpoint_idx}",
                    fix="the file repeats an episode: re-download it",
                )
            seen.add(ids)
            scan.lengths.append(record.steps)
            scan.ended.append(record.ended)
            scan.checkpoint_idx.append(record.checkpoint_idx)
            scan.episode_idx.append(record.episode_idx)
            scan.recorded_return.append(record.episode_return)
            scan.actions.append(record.actions.astype(np.int32))
            scan.rewards.append(record.rewards)
    if not scan.lengths:  # every checkpoint file of RL Unplugged holds episodes
        raise CorruptInputError(
            f"{source.name}: the file holds no episode",
            fix="the file is empty or cut before its first record: re-download it",
        )
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
    source: SourceFile,
    first_row: int,
    lengths: list[int],
    frames_path: str,
    max_record_bytes: int,
) -> int:
    """Pass 2 for one file (runs in a worker): decode its frames into their rows; returns the
    frames written. ``lengths`` are the scan's, checked again record by record."""
    import cv2

    cv2.setNumThreads(1)
    frames_fd = os.open(frames_path, os.O_WRONLY)
    frames_base = _npy_data_offset(Path(frames_path))
    buf = np.empty((CHUNK_FRAMES, *FRAME_SHAPE), dtype=np.uint8)
    row, kept = first_row, 0
    try:
        with source.open() as fh:
            for offset, data in iter_gzip_records(
                fh, source.name, max_record_bytes=max_record_bytes
            ):
                where = f"{source.name} record at byte {offset}"
                record = parse_record(data, where)
                if kept >= len(lengths) or record.steps != lengths[kept]:
                    raise CorruptInputError(
                        f"{where}: the file changed between the two passes",
                        fix="re-materialize the raw stage (the file is not the one listed)",
                    )
                pngs = record.pngs
                for start in range(0, len(pngs), CHUNK_FRAMES):
                    chunk = pngs[start : start + CHUNK_FRAMES]
                    decode_frames(chunk, buf, where, start)
                    _pwrite(
                        frames_fd,
                        memoryview(buf[: len(chunk)]).cast("B"),
                        frames_base + (row + start) * FRAME_BYTES,
                    )
                row += record.steps
                kept += 1
    finally:
        os.close(frames_fd)
    if kept != len(lengths):
        raise CorruptInputError(
            f"{source.name}: {kept} episodes on the second pass, {len(lengths)} on the first",
            fix="re-materialize the raw stage (the file is not the one listed)",
        )
    return row - first_row
