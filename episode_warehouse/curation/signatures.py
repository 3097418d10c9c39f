"""Per-episode signatures for finding duplicates (computed at the catalog stage):

- ``content_hash``: BLAKE2b-128 of the episode's stored steps: every numeric leaf's rows (in key
  order, with the key and dtype) and every camera's stored frame bytes (the bytes as published:
  re-encoding changes them). Two episodes with the same hash hold the same data.
- ``step_minhash``: a MinHash (:data:`MINHASHES` values) of the set of the episode's step
  fingerprints. A step's fingerprint hashes its float actions and states rounded to
  :data:`DIGITS` significant digits, its integer leaves, and, where the partition has no float
  action or state (Atari), its cameras' stored bytes (raw frames compressed losslessly: the same
  pixels, the same bytes). Two episodes that share most of their steps (a copy, a copy whose
  frames were re-encoded, a recording cut a few steps later) share most of their MinHash
  values: the share estimates the Jaccard similarity of their step sets. Distinct recordings
  share no step: sensor noise differs in the digits kept.
- ``frame_hashes``: a 64-bit perceptual hash (pHash: the signs, against their median, of the
  8x8 lowest frequencies of a 32x32 grey thumbnail's DCT, DC left out) of the frames at
  :data:`FRAME_FRACTIONS` of each camera's episode, cameras in key order. A look-alike signal
  to query, not part of the duplicate rule: on the 32x32 frames of ``bench.curation``
  re-encoding a JPEG flips up to 14 of the 64 bits while distinct frames of one scene can hash
  equal (docs/curation.md).
"""

from __future__ import annotations

import hashlib

import numpy as np
import pyarrow as pa

from episode_warehouse.curation.partition_arrays import PartitionArrays
from episode_warehouse.errors import CorruptInputError
from episode_warehouse.frames.rows import FrameRows

FRAME_FRACTIONS = (0.25, 0.5, 0.75)
COLUMNS = ("content_hash", "step_minhash", "frame_hashes")
MINHASHES = 64
DIGITS = 5
_SALTS = np.random.default_rng(20260605).integers(0, 2**63, MINHASHES, dtype=np.uint64)


def _grey(frame: np.ndarray) -> np.ndarray:
    """(H, W) float grey of a (C, H, W), (H, W, C) or (H, W) frame."""
    f = frame.astype(np.float32)
    if f.ndim == 2:
        return f
    channels_first = f.shape[0] in (1, 3, 4) and f.shape[-1] not in (1, 3, 4)
    return f[:3].mean(0) if channels_first else f[..., :3].mean(-1)


def _block_means(grey: np.ndarray, size: int) -> np.ndarray:
    """Area means of ``grey`` over a ``size`` x ``size`` grid (nearest rows and columns when the
    frame is smaller)."""
    h, w = grey.shape
    ys = (np.arange(size + 1) * h) // size
    xs = (np.arange(size + 1) * w) // size
    rows = np.array([grey[ys[i] : max(ys[i + 1], ys[i] + 1)].mean(0) for i in range(size)])
    return np.array([rows[:, xs[j] : max(xs[j + 1], xs[j] + 1)].mean(1) for j in range(size)]).T


def _dct_matrix(n: int) -> np.ndarray:
    k = np.arange(n)[:, None]
    return np.cos(np.pi * (2 * np.arange(n)[None, :] + 1) * k / (2 * n))


_DCT = _dct_matrix(32)


def phash(frame: np.ndarray) -> int:
    """The 64-bit perceptual hash of one frame (see the module), as a signed int64 (BIGINT)."""
    thumb = _block_means(_grey(frame), 32)
    low = (_DCT @ thumb @ _DCT.T)[:8, :8].ravel()
    ac = low[1:]
    bits = np.concatenate([[False], ac > np.median(ac)])
    value = int(np.packbits(bits).view(">u8")[0])
    return value - (1 << 64) if value >= 1 << 63 else value


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer over uint64 (wrapping arithmetic)."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def _rounded(values: np.ndarray) -> np.ndarray:
    """float64 ``values`` rounded to :data:`DIGITS` significant digits (NaN, inf: 0)."""
    v = np.where(np.isfinite(values), values, 0.0).astype(np.float64)
    magnitude = np.floor(np.log10(np.abs(v), out=np.zeros_like(v), where=v != 0))
    scale = 10.0 ** (DIGITS - 1 - magnitude)
    return np.round(v * scale) / scale


def step_fingerprints(columns: list[np.ndarray]) -> np.ndarray:
    """uint64 per step of (n, d) columns (floats rounded to :data:`DIGITS` digits)."""
    n = len(columns[0]) if columns else 0
    h = np.full(n, 0x9E3779B97F4A7C15, np.uint64)
    with np.errstate(over="ignore"):
        for values in columns:
            if values.dtype.kind == "f":
                words = _rounded(values).view(np.uint64)
            else:
                words = values.astype(np.int64).view(np.uint64)
            for j in range(words.shape[1]):
                h = _mix(h ^ words[:, j])
    return h


def minhash(fingerprints: np.ndarray) -> list[int]:
    """:data:`MINHASHES` minima of the salted fingerprints, as signed int64."""
    unique = np.unique(fingerprints)
    if not len(unique):
        return [0] * MINHASHES
    with np.errstate(over="ignore"):
        mins = _mix(unique[None, :] ^ _SALTS[:, None]).min(1)
    return mins.view(np.int64).tolist()


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


def _frame_words(rows, start: int, stop: int) -> np.ndarray:
    """(n, 1) uint64: a hash of each stored frame's bytes."""
    return np.array(
        [[int.from_bytes(hashlib.blake2b(_camera_bytes(rows, i, i + 1), digest_size=8).digest())]
         for i in range(start, stop)],
        np.uint64,
    ).reshape(-1, 1)  # fmt: skip


def signature_columns(arrays: PartitionArrays) -> dict[str, pa.Array]:
    """The signature columns of a partition's episodes, in its episode table's order."""
    states = arrays.floats("action") + arrays.floats("observation")
    discrete = [(k, v) for k, v in arrays.numeric.items()
                if k.split("/")[0] == "action" and v.dtype.kind in "iub"]  # fmt: skip
    cameras = sorted(arrays.cameras.items())
    hashes, steps, frames = [], [], []
    for start, n in zip(arrays.starts.tolist(), arrays.lengths.tolist(), strict=True):
        h = hashlib.blake2b(digest_size=16)
        for key, values in sorted(arrays.numeric.items()):
            h.update(f"{key}:{values.dtype.str}:{values.shape[1]}".encode())
            h.update(np.ascontiguousarray(values[start : start + n]).data)
        for key, rows in cameras:
            h.update(f"{key}:frames".encode())
            h.update(_camera_bytes(rows, start, start + n))
        hashes.append(h.hexdigest())
        columns = [v[start : start + n] for _, v in (*states, *discrete)]
        if not states:  # no float action or state: the frames are the steps' content
            columns += [_frame_words(rows, start, start + n) for _, rows in cameras]
        steps.append(minhash(step_fingerprints(columns)) if columns and n else None)
        picks = []
        for _, rows in cameras:
            for fraction in FRAME_FRACTIONS:
                frame = _frame(rows, start + min(n - 1, int(fraction * n)))
                picks.append(None if frame is None else phash(frame))
        frames.append(picks or None)
    return {
        "content_hash": pa.array(hashes, pa.string()),
        "step_minhash": pa.array(steps, pa.list_(pa.int64())),
        "frame_hashes": pa.array(frames, pa.list_(pa.int64())),
    }
