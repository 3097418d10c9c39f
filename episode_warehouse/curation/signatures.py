"""Per-episode signatures for finding duplicates (computed at the catalog stage):

- ``content_hash``: BLAKE2b-128 of the episode's stored steps: every numeric leaf's rows (in key
  order, with the key and dtype) and, per camera, the length and CRC-32 (zlib) of its stored
  frame bytes (the bytes as published: re-encoding changes them; CRC-32 reads 3.5 GB/s here,
  BLAKE2b 0.9 GB/s, as much time as the rest of the catalog stage on a JPEG dataset). Two
  episodes with the same hash hold the same data (but for a CRC-32 collision of frames whose
  every number is equal).
- ``step_minhash``: a MinHash (:data:`MINHASHES` values) of the set of the episode's step
  fingerprints. A step's fingerprint hashes its float actions and states (leaves of at most
  :data:`MAX_STATE_DIMS` values: a 512-d language embedding describes the task, not the step)
  by value (a float32 and a float64 copy of the same numbers agree), its integer actions,
  and, where the partition has no float action or state (Atari), its cameras' decoded pixels
  (the same pixels stored as zstd or PNG agree). Two episodes that share most of their steps
  (a copy, a copy whose frames were re-encoded, a recording cut a few steps later) share most
  of their MinHash values: the share estimates the Jaccard similarity of their step sets.
  Distinct recordings share no step: their sensors' noise differs.
- ``sample_steps`` and ``sample_thumbs``: what the episode looks like at :data:`SAMPLES` of its
  steps chosen by content (the steps of the smallest fingerprints: two episodes that share
  steps choose the same ones, wherever they sit in each): the fingerprints, and per step and
  camera (in key order) an 8x8 grey thumbnail of the decoded frame, 64 bytes. Two episodes
  whose actions agree but whose frames do not (the same trajectory replayed in another scene)
  differ here; a re-encoded copy does not (docs/curation.md).
- ``text_hash``: BLAKE2b-64 of the episode's distinct texts (its instructions), or NULL.
- ``frame_hashes``: a 64-bit perceptual hash (pHash: the signs, against their median, of the
  8x8 lowest frequencies of a 32x32 grey thumbnail's DCT, DC left out) of the sampled frames
  (:data:`~episode_warehouse.curation.partition_arrays.SAMPLE_FRACTIONS` of each camera's
  episode, from the previews the audit decoded), cameras in key order. A look-alike signal
  to query, not part of the duplicate rule: on the 32x32 frames of ``bench.curation``
  re-encoding a JPEG flips up to 14 of the 64 bits while distinct frames of one scene can hash
  equal (docs/curation.md).
"""

from __future__ import annotations

import functools
import hashlib
import zlib

import numpy as np
import pyarrow as pa

from episode_warehouse.curation.partition_arrays import PartitionArrays

COLUMNS = ("content_hash", "step_minhash", "frame_hashes", "sample_steps", "sample_thumbs",
           "text_hash")  # fmt: skip
MINHASHES = 64
SAMPLES = 8  # steps per episode whose frames are compared (the smallest fingerprints)
THUMB = 8  # a sample frame's thumbnail is THUMB x THUMB grey means
MAX_STATE_DIMS = 64  # wider float leaves (a 512-d language embedding) describe the task
_SALTS = np.random.default_rng(20260605).integers(0, 2**63, MINHASHES, dtype=np.uint64)


@functools.lru_cache(maxsize=64)
def _averaging(n: int, size: int) -> np.ndarray:
    """(size, n): row i averages the inputs of block i of ``n`` cut into ``size`` (the nearest
    input where a block is empty: a frame smaller than the grid)."""
    edges = (np.arange(size + 1) * n) // size
    out = np.zeros((size, n), np.float32)
    for i in range(size):
        a, b = edges[i], max(edges[i + 1], edges[i] + 1)
        out[i, min(a, n - 1) : min(b, n)] = 1.0
    return out / out.sum(1, keepdims=True)


def _block_means(grey: np.ndarray, size: int) -> np.ndarray:
    """Area means of ``grey`` over a ``size`` x ``size`` grid."""
    h, w = grey.shape
    return _averaging(h, size) @ grey @ _averaging(w, size).T


def _dct_matrix(n: int) -> np.ndarray:
    k = np.arange(n)[:, None]
    return np.cos(np.pi * (2 * np.arange(n)[None, :] + 1) * k / (2 * n))


_DCT = _dct_matrix(32)


def phash(grey: np.ndarray) -> int:
    """The 64-bit perceptual hash of a grey frame (see the module), as a signed int64."""
    thumb = _block_means(grey, 32)
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


def _exact(values: np.ndarray) -> np.ndarray:
    """float64 ``values`` as uint64 words, by value: a float32 copy and a float64 copy of the
    same numbers agree (-0.0 is 0.0; NaN and infinity are 0: the audit names them)."""
    v = np.asarray(values, np.float64)
    return np.where(np.isfinite(v) & (v != 0), v, 0.0).view(np.uint64)


def step_fingerprints(columns: list[np.ndarray]) -> np.ndarray:
    """uint64 per step of (n, d) columns (floats by value): every value mixed with its
    column's salt, xor-folded across the step, mixed again."""
    n = len(columns[0]) if columns else 0
    h = np.zeros(n, np.uint64)
    offset = 0
    with np.errstate(over="ignore"):
        for values in columns:
            if values.dtype.kind == "f":
                words = _exact(values.reshape(n, -1))
            else:
                words = values.reshape(n, -1).astype(np.int64).view(np.uint64)
            salts = _column_salts(offset + words.shape[1])[offset:]
            h ^= np.bitwise_xor.reduce(_mix(words ^ salts[None, :]), axis=1)
            offset += words.shape[1]
        return _mix(h)


@functools.lru_cache(maxsize=8)
def _column_salts(n: int) -> np.ndarray:
    return np.random.default_rng(7).integers(0, 2**63, max(n, 1), dtype=np.uint64)


def minhash(fingerprints: np.ndarray) -> list[int]:
    """:data:`MINHASHES` minima of the salted fingerprints, as signed int64."""
    unique = np.unique(fingerprints)
    if not len(unique):
        return [0] * MINHASHES
    with np.errstate(over="ignore"):
        mins = _mix(unique[None, :] ^ _SALTS[:, None]).min(1)
    return mins.view(np.int64).tolist()


def _pixel_words(rows, start: int, stop: int, chunk: int = 1024) -> np.ndarray:
    """(n, 1) uint64: a hash of each frame's decoded pixels, the same however they are stored
    (zstd, PNG or raw rows) and in whichever form a grey frame is kept (``(H, W)``, or three
    equal channels: an export to RGB and its import back)."""
    out = np.zeros((stop - start, 1), np.uint64)
    for a in range(start, stop, chunk):
        frames = np.asarray(rows[a : min(a + chunk, stop)])
        if frames.ndim == 4 and frames.shape[1] == 3:  # (n, C, H, W): grey as three channels?
            grey = (frames[:, 0] == frames[:, 1]).all((1, 2)) & (frames[:, 1] == frames[:, 2]).all(
                (1, 2)
            )
        else:
            grey = np.zeros(len(frames), bool)
        for i, frame in enumerate(frames):
            pixels = np.ascontiguousarray(frame[0] if grey[i] else frame)
            digest = hashlib.blake2b(pixels.data, digest_size=8).digest()
            out[a - start + i, 0] = int.from_bytes(digest)
    return out


def thumbnail(grey: np.ndarray) -> bytes:
    """An 8x8 grey thumbnail of a frame (area means, rounded to uint8)."""
    means = _block_means(np.asarray(grey, np.float32), THUMB)
    return np.clip(np.rint(means), 0, 255).astype(np.uint8).tobytes()


def _sample(arrays: PartitionArrays, fingerprints: np.ndarray, start: int, n: int, cameras):
    """(fingerprints, thumbnails) of the episode's sample steps (see the module)."""
    if not n or not len(fingerprints):
        return None, None
    values, first = np.unique(fingerprints[start : start + n], return_index=True)
    picks = np.argsort(values, kind="stable")[:SAMPLES]  # (unique: already sorted)
    steps = values[picks].view(np.int64).tolist()
    if not cameras:
        return steps, None
    thumbs = bytearray()
    for row in (start + first[picks]).tolist():
        for key, _ in cameras:
            preview = arrays.preview(key, int(row))
            thumbs += thumbnail(preview) if not isinstance(preview, Exception) else bytes(64)
    return steps, bytes(thumbs)


def signature_columns(arrays: PartitionArrays) -> dict[str, pa.Array]:
    """The signature columns of a partition's episodes, in its episode table's order."""
    states = [(k, v) for k, v in arrays.floats("action") + arrays.floats("observation")
              if v.shape[1] <= MAX_STATE_DIMS]  # fmt: skip
    discrete = [(k, v) for k, v in arrays.numeric.items()
                if k.split("/")[0] == "action" and v.dtype.kind in "iub"]  # fmt: skip
    cameras = sorted(arrays.cameras.items())
    hashes, steps, frames, samples, thumbs, texts = [], [], [], [], [], []
    columns = [np.asarray(v) for _, v in (*states, *discrete)]
    if not states:  # no float action or state: the frames are the steps' content
        columns += [_pixel_words(rows, 0, arrays.rows) for _, rows in cameras]
    has_steps = bool(columns)
    fingerprints = step_fingerprints(columns) if has_steps else np.zeros(0, np.uint64)
    for e, (start, n) in enumerate(zip(arrays.starts.tolist(), arrays.lengths.tolist(),
                                       strict=True)):  # fmt: skip
        h = hashlib.blake2b(digest_size=16)
        for key, values in sorted(arrays.numeric.items()):
            h.update(f"{key}:{values.dtype.str}:{values.shape[1]}".encode())
            h.update(np.ascontiguousarray(values[start : start + n]).data)
        for key, rows in cameras:
            data = rows.stored_bytes(start, start + n)
            h.update(f"{key}:frames:{len(data)}:{zlib.crc32(data)}".encode())
        episode_texts = arrays.episode_texts(e)
        for line in episode_texts:
            h.update(f"text:{line}".encode())
        hashes.append(h.hexdigest())
        steps.append(minhash(fingerprints[start : start + n]) if has_steps and n else None)
        picks = []
        for key, _ in cameras:
            for row in arrays.sample_rows(start, n):
                preview = arrays.preview(key, row)
                picks.append(None if isinstance(preview, Exception) else phash(preview))
        frames.append(picks or None)
        sample, thumb = _sample(arrays, fingerprints, start, n, cameras)
        samples.append(sample)
        thumbs.append(thumb)
        said = "\n".join(episode_texts).encode()
        texts.append(hashlib.blake2b(said, digest_size=8).hexdigest() if episode_texts else None)
    return {
        "content_hash": pa.array(hashes, pa.string()),
        "step_minhash": pa.array(steps, pa.list_(pa.int64())),
        "frame_hashes": pa.array(frames, pa.list_(pa.int64())),
        "sample_steps": pa.array(samples, pa.list_(pa.int64())),
        "sample_thumbs": pa.array(thumbs, pa.binary()),
        "text_hash": pa.array(texts, pa.string()),
    }
