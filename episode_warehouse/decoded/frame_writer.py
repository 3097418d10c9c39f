"""A camera's frames written encoded (``arrays/<key>.frames`` and ``arrays/<key>.offsets.npy``,
:mod:`episode_warehouse.frames.rows`): the source's bytes where it gave them, else the pixels
compressed once (:func:`~episode_warehouse.frames.codec.encode_pixels`).

Frames are appended in row order; an observation camera ends with one empty frame (its extra
zero row, which the TED's ``("next", key)`` reads on the last step), as its ``.npy`` would.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import numpy as np

from episode_warehouse.atomic import copy_range, link_or_copy
from episode_warehouse.decoded.format import ArraySpec
from episode_warehouse.frames.camera_rows import CameraRows
from episode_warehouse.frames.codec import encode_pixels
from episode_warehouse.frames.video import ref_blob
from episode_warehouse.guards.names import checked_name
from episode_warehouse.threads import compute_threads

ENCODE_CHUNK = 256  # raw frames compressed per batch of the encoding pool


def _copy_bytes(src: Path, dst, start: int, stop: int) -> None:
    with open(src, "rb") as source:
        copy_range(source.fileno(), dst.fileno(), start, stop - start)


class FrameAppender:
    """One camera's encoded frames, appended; :meth:`close` writes the offsets."""

    def __init__(self, folder: Path, spec: ArraySpec) -> None:
        self.spec, self.folder = spec, folder
        self.row_shape = spec.row_shape
        self.fh = open(spec.path(folder), "wb")  # noqa: SIM115 - closed in close()
        self.offsets: list[np.ndarray] = [np.zeros(1, np.int64)]
        self.end = 0
        self.rows = 0
        self.videos: dict[str, Path] = {}  # a video camera's files, in reference order

    def append(self, rows: CameraRows) -> None:
        pixels = rows.pixels
        if pixels.shape[1:] != self.row_shape:
            raise ValueError(f"{self.spec.key}: rows of {pixels.shape[1:]}, not {self.row_shape}")
        if rows.refs is not None:
            self._append_refs(rows)
            return
        missing = [k for k in range(len(rows)) if rows.blob(k) is None]
        encoded = dict(zip(missing, _encode_all(pixels, missing), strict=True))
        sizes = np.empty(len(rows), np.int64)
        for k in range(len(rows)):
            blob = encoded.get(k) or rows.blob(k) or b""  # a row is encoded or has its bytes
            self.fh.write(blob)
            sizes[k] = len(blob)
        self._grew(sizes)

    def _append_refs(self, rows: CameraRows) -> None:
        """A video camera's rows as references into its files (linked when closed)."""
        known = rows.videos or {}
        sizes = np.empty(len(rows), np.int64)
        for k, (name, index) in enumerate(rows.refs or ()):
            if name not in self.videos:
                if name not in known:
                    raise ValueError(f"{self.spec.key}: a reference to {name!r}, not given")
                self.videos[name] = known[name]
            blob = ref_blob(list(self.videos).index(name), index)
            self.fh.write(blob)
            sizes[k] = len(blob)
        self._grew(sizes)

    def append_from(self, src: Path, offsets: np.ndarray) -> None:
        """Append frames stored in file ``src``: ``offsets`` (one more than the frames) are
        where they lie in it; their bytes are copied by the kernel, not decoded."""
        self.fh.flush()
        _copy_bytes(src, self.fh, int(offsets[0]), int(offsets[-1]))
        self.fh.seek(0, 2)
        self._grew(np.diff(np.asarray(offsets, np.int64)))

    def _grew(self, sizes: np.ndarray) -> None:
        self.offsets.append(self.end + np.cumsum(sizes))
        self.end += int(sizes.sum())
        self.rows += len(sizes)

    def close(self) -> int:
        """Write the offsets (an observation camera: one empty frame more); the frame count."""
        rows = self.rows
        if self.spec.role == "observation":
            self._grew(np.zeros(1, np.int64))
        self.fh.close()
        np.save(self.spec.offsets_path(self.folder), np.concatenate(self.offsets))
        for name, source in self.videos.items():  # kept once: linked, never re-encoded
            target = self.spec.video_path(
                self.folder, checked_name(name, subject=str(source), what="video file name")
            )
            target.parent.mkdir(parents=True, exist_ok=True)
            link_or_copy(source, target)
        self.spec = replace(self.spec, videos=tuple(self.videos))
        return rows


def _encode_all(pixels: np.ndarray, rows: list[int]) -> list[bytes]:
    """``encode_pixels`` of ``pixels[rows]``, on threads where there are many (Zstandard works
    without the GIL)."""
    if len(rows) <= ENCODE_CHUNK:
        return [encode_pixels(pixels[k]) for k in rows]
    chunks = [rows[i : i + ENCODE_CHUNK] for i in range(0, len(rows), ENCODE_CHUNK)]
    with ThreadPoolExecutor(compute_threads(), thread_name_prefix="frame-encode") as pool:
        done = pool.map(lambda chunk: [encode_pixels(pixels[k]) for k in chunk], chunks)
        return [blob for chunk in done for blob in chunk]


def encode_allocated(folder: Path, spec: ArraySpec) -> ArraySpec:
    """Replace a camera written in place as an ``.npy`` (a decoder that fills rows out of
    order: Atari's) by its frames encoded; returns the encoded spec."""
    plain = spec.path(folder)
    encoded = spec.encoded()
    pixels = np.load(plain, mmap_mode="r")
    rows = len(pixels) - (1 if spec.role == "observation" else 0)
    appender = FrameAppender(folder, encoded)
    for start in range(0, rows, ENCODE_CHUNK * 16):
        stop = min(rows, start + ENCODE_CHUNK * 16)
        appender.append(CameraRows(np.asarray(pixels[start:stop])))
    appender.close()
    del pixels
    plain.unlink()
    return encoded
