"""Per-episode signatures for finding duplicates (computed at the catalog stage):

- ``content_hash``: BLAKE2b-128 of the episode's stored steps: every numeric leaf's rows (in key
  order, with the key and dtype) and every camera's stored frame bytes (the bytes as published:
  re-encoding changes them). Two episodes with the same hash hold the same data.
- ``frame_hashes``: a 64-bit difference hash (dHash: the sign of horizontal brightness steps
  of an 8x9 grey thumbnail) of the frames at :data:`FRAME_FRACTIONS` of each camera's episode,
  cameras in key order; robust to re-encoding and to a shift of a few steps.
- ``trajectory_signature``: the float actions and states, each value ``sign(x) log(1 + |x|)``
  (no statistics of the partition: the same episode in another partition signs the same),
  resampled to :data:`TRAJECTORY_POINTS` points over the episode's time and flattened; longer
  than :data:`SIGNATURE_DIMS` it is projected to that many with a fixed Gaussian matrix
  (seeded by the length: every episode of one schema shares it).
"""

from __future__ import annotations

import hashlib

import numpy as np
import pyarrow as pa

from episode_warehouse.curation.partition_arrays import PartitionArrays
from episode_warehouse.errors import CorruptInputError
from episode_warehouse.frames.rows import FrameRows

FRAME_FRACTIONS = (0.25, 0.5, 0.75)
TRAJECTORY_POINTS = 8
SIGNATURE_DIMS = 64
THUMB = (8, 9)  # rows, columns of the dHash thumbnail
COLUMNS = ("content_hash", "frame_hashes", "trajectory_signature")


def _grey(frame: np.ndarray) -> np.ndarray:
    """(H, W) float grey of a (C, H, W), (H, W, C) or (H, W) frame."""
    f = frame.astype(np.float32)
    if f.ndim == 2:
        return f
    channels_first = f.shape[0] in (1, 3, 4) and f.shape[-1] not in (1, 3, 4)
    return f[:3].mean(0) if channels_first else f[..., :3].mean(-1)


def _block_means(grey: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """Area means of ``grey`` over a ``rows`` x ``cols`` grid (any size: edges by linspace)."""
    h, w = grey.shape
    ys = np.linspace(0, h, rows + 1).astype(int)
    xs = np.linspace(0, w, cols + 1).astype(int)
    ys[1:] = np.maximum(ys[1:], ys[:-1] + 1).clip(max=h)
    xs[1:] = np.maximum(xs[1:], xs[:-1] + 1).clip(max=w)
    summed = np.add.reduceat(np.add.reduceat(grey, ys[:-1].clip(max=h - 1), 0),
                             xs[:-1].clip(max=w - 1), 1)  # fmt: skip
    area = np.outer(np.diff(ys), np.diff(xs)).clip(min=1)
    return summed / area


def dhash(frame: np.ndarray) -> int:
    """The 64-bit difference hash of one frame, as a signed int64 (a BIGINT)."""
    thumb = _block_means(_grey(frame), *THUMB)
    bits = (thumb[:, 1:] > thumb[:, :-1]).ravel()
    value = int(np.packbits(bits).view(">u8")[0])
    return value - (1 << 64) if value >= 1 << 63 else value


def slog(x: np.ndarray) -> np.ndarray:
    return np.sign(x) * np.log1p(np.abs(x))


def resample(values: np.ndarray, points: int) -> np.ndarray:
    """(points, d): ``values`` (n, d) linearly interpolated at ``points`` even times."""
    n = len(values)
    if n == 1:
        return np.repeat(values, points, 0)
    at = np.linspace(0, n - 1, points)
    lo = np.floor(at).astype(int)
    hi = np.minimum(lo + 1, n - 1)
    w = (at - lo)[:, None]
    return values[lo] * (1 - w) + values[hi] * w


def _projection(length: int) -> np.ndarray:
    rng = np.random.default_rng(length)
    return rng.standard_normal((length, SIGNATURE_DIMS)) / np.sqrt(SIGNATURE_DIMS)


def trajectory_signature(values: np.ndarray) -> np.ndarray:
    """The signature of one episode's (n, d) float actions and states (see the module)."""
    flat = resample(slog(np.nan_to_num(values.astype(np.float64))), TRAJECTORY_POINTS).ravel()
    if len(flat) > SIGNATURE_DIMS:
        flat = flat @ _projection(len(flat))
    return flat.astype(np.float32)


def _frame(rows, row: int) -> np.ndarray | None:
    try:
        return np.asarray(rows[row])
    except CorruptInputError:
        return None  # the audit names it


def _camera_bytes(rows, start: int, stop: int) -> bytes | memoryview:
    if isinstance(rows, FrameRows):
        return memoryview(np.ascontiguousarray(rows.read(int(rows.offsets[start]),
                                                         int(rows.offsets[stop]))))  # fmt: skip
    return memoryview(np.ascontiguousarray(rows[start:stop])).cast("B")


def signature_columns(arrays: PartitionArrays) -> dict[str, pa.Array]:
    """The three signature columns of a partition's episodes, in its episode table's order."""
    states = arrays.floats("action") + arrays.floats("observation")
    hashes, frames, trajectories = [], [], []
    for start, n in zip(arrays.starts.tolist(), arrays.lengths.tolist(), strict=True):
        h = hashlib.blake2b(digest_size=16)
        for key, values in sorted(arrays.numeric.items()):
            h.update(f"{key}:{values.dtype.str}:{values.shape[1]}".encode())
            h.update(np.ascontiguousarray(values[start : start + n]).data)
        for key, rows in sorted(arrays.cameras.items()):
            h.update(f"{key}:frames".encode())
            h.update(_camera_bytes(rows, start, start + n))
        hashes.append(h.hexdigest())
        picks = []
        for _, rows in sorted(arrays.cameras.items()):
            for fraction in FRAME_FRACTIONS:
                frame = _frame(rows, start + min(n - 1, int(fraction * n)))
                picks.append(None if frame is None else dhash(frame))
        frames.append(picks or None)
        if states and n:
            values = np.concatenate([v[start : start + n] for _, v in states], 1)
            trajectories.append(trajectory_signature(values).tolist())
        else:
            trajectories.append(None)
    return {
        "content_hash": pa.array(hashes, pa.string()),
        "frame_hashes": pa.array(frames, pa.list_(pa.int64())),
        "trajectory_signature": pa.array(trajectories, pa.list_(pa.float32())),
    }
