"""The integrity audit of one partition: findings per episode, each naming its kind, the TED
key, the first step (within the episode) and how many steps it spans.

Computed at the catalog stage from the TED it already reads, streaming over memory-mapped files
(no episode is held whole). What each kind means, and what it costs:

- ``bad_frame``: a stored frame whose bytes are not a whole frame of a known kind: checked for
  *every* frame, without decoding, from the bytes themselves (a JPEG must start with its SOI
  marker and end with EOI, a PNG with its IEND chunk; a zstd frame must start with its magic);
  a frame whose bytes no longer have the CRC-32C the TED stage wrote for them (*every* frame:
  bit rot that still decodes, to wrong pixels); and a frame that fails to decode in the
  *decoded sample* (below).
- ``frame_shape``: a sampled frame whose header declares, or whose pixels have, another size
  than its camera's rows. The sample: three frames per episode and camera, at 1/4, 1/2 and
  3/4 of the episode (the frames the perceptual hashes read, decoded once for both; a JPEG at
  1/8 of each side, which reads every coefficient as a full decode does).
- ``frame_count``: a camera with fewer stored frames than the partition has steps (the steps
  without a frame, per episode).
- ``frozen_camera``: :data:`FROZEN_RUN` or more consecutive frames whose stored bytes are
  identical (compared byte for byte where two neighbours have the same size; nothing decoded).
  A video camera's rows are references, not pixels: it is not checked for this.

The numeric leaves', timestamps' and episode lengths' kinds (``non_finite``,
``action_at_bound``, ``frozen_action``, ``action_jump``, ``timestamp_*``, ``one_step``,
``short_episode``, and the per-partition ``*_dimension`` kinds) are checked by ``audit_steps``.
"""

from __future__ import annotations

import logging

import numpy as np

from episode_warehouse.curation import audit_steps as steps
from episode_warehouse.curation.audit_steps import runs, same_episode
from episode_warehouse.curation.findings import Findings
from episode_warehouse.curation.partition_arrays import PartitionArrays
from episode_warehouse.errors import CorruptInputError
from episode_warehouse.frames.codec import OtherSizeError, whole_frames
from episode_warehouse.frames.plain_rows import PlainRows
from episode_warehouse.frames.rows import FrameRows, frame_checksums

log = logging.getLogger(__name__)

FROZEN_RUN = 30  # identical consecutive frames (2 s at DROID's 15 Hz, 3 s at 10 Hz)
CHUNK = 4096  # rows of raw pixels compared at once


def _stored_bytes(rows: FrameRows) -> np.ndarray:
    return np.asarray(rows.stored_bytes(0, len(rows)))


def _bad_bytes(rows: FrameRows, n: int) -> np.ndarray:
    """Rows ``< n`` whose bytes are not a whole frame of a known kind (the codec table's rule,
    no decode)."""
    offsets = np.asarray(rows.offsets[: n + 1], np.int64) - int(rows.offsets[0])
    return np.flatnonzero(~whole_frames(_stored_bytes(rows), offsets[:-1], offsets[1:]))


def _check_frames(key: str, rows, arrays: PartitionArrays, found: Findings) -> None:
    n = min(len(rows), arrays.rows)
    if n < arrays.rows:  # steps without a frame
        for e in np.flatnonzero(arrays.starts + arrays.lengths > n).tolist():
            first = max(n, int(arrays.starts[e]))
            found.add(e, "frame_count", key, first - int(arrays.starts[e]),
                      int(arrays.starts[e] + arrays.lengths[e]) - first,
                      f"{len(rows)} frames stored for {arrays.rows} steps")  # fmt: skip
    within = same_episode(arrays)[: max(n - 1, 0)]
    if rows.encoded:  # its stored bytes are a codec's: checked as such
        _check_encoded(key, rows, n, arrays, within, found)
    else:
        _check_raw(key, rows, n, within, found)


def _changed(rows: FrameRows, n: int) -> np.ndarray:
    """Rows ``< n`` whose bytes no longer have the checksum written for them (none kept: [])."""
    if rows.checksums is None:
        return np.zeros(0, np.int64)
    offsets = np.asarray(rows.offsets[: n + 1], np.int64) - int(rows.offsets[0])
    sums = frame_checksums(_stored_bytes(rows), offsets)
    return np.flatnonzero(sums != np.asarray(rows.checksums[:n], np.uint32))


def _check_encoded(key, rows: FrameRows, n, arrays, within, found: Findings) -> None:
    bad = _bad_bytes(rows, n)
    for row in bad.tolist():
        found.add_row("bad_frame", key, row, 1, "not a whole JPEG, PNG or zstd frame")
    seen_bad = set(bad.tolist())
    changed = set(_changed(rows, n).tolist()) - seen_bad
    for row in sorted(changed):  # (a sampled one is decoded too: what it is now)
        found.add_row("bad_frame", key, row, 1,
                      "its bytes changed since they were written (CRC-32C)")  # fmt: skip
    for start, length in zip(arrays.starts.tolist(), arrays.lengths.tolist(), strict=True):
        for row in arrays.sample_rows(start, length):
            if row >= n or row in seen_bad:
                continue
            got = arrays.preview(key, row)
            if isinstance(got, CorruptInputError):
                kind = "frame_shape" if isinstance(got, OtherSizeError) else "bad_frame"
                if kind == "frame_shape" or row not in changed:  # (one bad_frame a row)
                    found.add_row(kind, key, row, 1, got.what[:200])
    if rows.videos is not None:
        return
    offsets = np.asarray(rows.offsets[: n + 1], np.int64)
    sizes = np.diff(offsets)
    data = _stored_bytes(rows)
    base = int(rows.offsets[0])
    same = np.zeros(max(n - 1, 0), bool)
    for i in np.flatnonzero((sizes[1:] == sizes[:-1]) & within).tolist():
        a, b, c = (int(offsets[i]) - base, int(offsets[i + 1]) - base,
                   int(offsets[i + 2]) - base)  # fmt: skip
        same[i] = np.array_equal(data[a:b], data[b:c])
    _frozen_runs(key, same, found)


def _check_raw(key: str, rows: PlainRows, n: int, within, found: Findings) -> None:
    same = np.zeros(max(n - 1, 0), bool)
    for a in range(0, n - 1, CHUNK):
        b = min(n - 1, a + CHUNK)
        block = np.asarray(rows[a : b + 1]).reshape(b + 1 - a, -1)
        same[a:b] = (block[1:] == block[:-1]).all(1)
    _frozen_runs(key, same & within, found)


def _frozen_runs(key: str, same: np.ndarray, found: Findings) -> None:
    for start, length in runs(same):
        if length + 1 >= FROZEN_RUN:
            found.add_row("frozen_camera", key, start, length + 1,
                          f"{length + 1} identical consecutive frames")  # fmt: skip


def audit_partition(arrays: PartitionArrays, fps: float | None) -> Findings:
    """Every finding of one partition (see the module's docs for the kinds)."""
    found = Findings(arrays.starts, arrays.lengths)
    steps.check_lengths(arrays, fps, found)
    steps.check_values(arrays, found)
    continuous = steps.continuous_actions(arrays)
    steps.check_actions(arrays, continuous, found)
    steps.check_timestamps(arrays, fps, found)
    steps.check_dimensions(arrays, continuous, found)
    for key, rows in arrays.cameras.items():
        _check_frames(key, rows, arrays, found)
    total = sum(len(f) for f in found.by_episode) + len(found.partition)
    if total:
        log.info("audit of %s: %d findings", arrays.folder, total)
    return found
