"""Copy observation rows from one checkpoint file into the decoded frames array.

Kept free of heavy imports: it runs in the worker pool (``episode_warehouse.workers``), one
gzip stream per worker, both cores busy.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from episode_warehouse.errors import CorruptInputError
from episode_warehouse.sources.atari.checkpoint_reader import stream_rows

CHUNK_ROWS = 2048  # 14 MB of 84x84 frames per read


def _data_offset(path: Path) -> tuple[int, int]:
    """(byte offset of row 0, bytes per row) of an .npy file."""
    with open(path, "rb") as fh:
        version = np.lib.format.read_magic(fh)
        read = (
            np.lib.format.read_array_header_1_0
            if version == (1, 0)
            else np.lib.format.read_array_header_2_0
        )
        shape, _, dtype = read(fh)
        return fh.tell(), int(np.prod(shape[1:], dtype=np.int64)) * dtype.itemsize


def copy_frames(
    src: Path, runs: list[tuple[int, int, int]], dst: Path, chunk_rows: int = CHUNK_ROWS
) -> int:
    """Copy slot runs ``(slot, row, length)`` of ``src`` into rows of the .npy at ``dst``.

    Returns the number of rows copied. Reads the file once, in order, stops after the last
    slot it needs, and writes with ``pwrite`` (no page faults of a writable memory map).
    """
    if not runs:
        return 0
    base, row_bytes = _data_offset(dst)
    runs = sorted(runs)
    last_slot = max(s + n for s, _, n in runs)
    copied = 0
    i = 0
    fd = os.open(dst, os.O_WRONLY)
    try:
        for first, chunk in stream_rows(src, chunk_rows):
            end = first + len(chunk)
            while i < len(runs) and runs[i][0] + runs[i][2] <= first:
                i += 1
            j = i
            while j < len(runs) and runs[j][0] < end:
                slot, row, n = runs[j]
                a, b = max(slot, first), min(slot + n, end)
                data = memoryview(chunk[a - first : b - first]).cast("B")
                offset = base + (row + a - slot) * row_bytes
                while data:
                    written = os.pwrite(fd, data, offset)
                    data, offset = data[written:], offset + written
                copied += b - a
                j += 1
            if end >= last_slot:
                break
    finally:
        os.close(fd)
    return copied


def verify_frames(
    src: Path, runs: list[tuple[int, int, int]], dst: Path, chunk_rows: int = CHUNK_ROWS
) -> None:
    """Check that slot runs of ``src`` equal the rows already written to ``dst``.

    Raises:
        CorruptInputError: a frame differs (a final log that disagrees with its predecessor).
    """
    if not runs:
        return
    out = np.load(dst, mmap_mode="r")
    runs = sorted(runs)
    last_slot = max(s + n for s, _, n in runs)
    for first, chunk in stream_rows(src, chunk_rows):
        end = first + len(chunk)
        for slot, row, n in runs:
            a, b = max(slot, first), min(slot + n, end)
            if a < b and not np.array_equal(
                out[row + (a - slot) : row + (b - slot)], chunk[a - first : b - first]
            ):
                raise CorruptInputError(
                    "the final log's frames disagree with the previous checkpoint on the rows "
                    "they share: a lap was lost before it, or it does not belong to this run",
                    subject=str(src),
                    fix="leave the final log out of the checkpoint subset",
                )
        if end >= last_slot:
            break


def read_slots(src: Path, slots: list[int], chunk_rows: int = CHUNK_ROWS) -> np.ndarray:
    """The observation rows at ``slots`` (streams up to the largest one)."""
    want = sorted(set(slots))
    found: dict[int, np.ndarray] = {}
    for first, chunk in stream_rows(src, chunk_rows):
        for s in want:
            if first <= s < first + len(chunk):
                found[s] = chunk[s - first].copy()
        if len(found) == len(want):
            break
    return np.stack([found[s] for s in slots])
