"""Frames in video files, decoded with torchcodec: the one wrapper of its decoder.

Two readers decode video: a TED's video camera (LeRobot v3's MP4s kept beside the camera's frame
file, ``videos/<name>``, a row stored as a reference: ``EWVR``, the video's number in the
camera's list of files and the frame's index in it, 12 bytes), and the LeRobot source's reader
(``sources/lerobot/video.py``), which finds each row's frame as lerobot does. Both decode here:

- **in runs**: :func:`decode_indices` decodes the frames it is asked for in forward passes
  (``get_frames_in_range``), one call per run of consecutive frames of at most ``RUN_FRAMES``
  frames, never a run across a gap between wanted frames, so memory follows the rows, not their
  time span (five rows 600 s apart in a static video decoded the whole span at once: 2.3 GB);
  exact seeks throughout, so the pixels are the frames the decoded stage checked against
  lerobot's timestamps and equal ``LeRobotDataset``'s (tests compare them);
- **one decoder per thread**: FFmpeg's decoder state is not thread-safe, and a viewer answering
  several frame requests at once, or statistics counted on a thread per core, crashed the
  process (exit 139) when two threads seeked one decoder. :func:`thread_decoder` gives each
  thread its own;
- **bounded per process**: at most ``KEPT`` decoders open at once over every thread, camera and
  reader (the least recently used is closed; TorchRL keeps at most 8), where lerobot's
  unbounded cache reached 34.9 GB per worker (lerobot PR #3614).
"""

from __future__ import annotations

import os
import struct
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence

import numpy as np

from episode_warehouse.errors import CorruptInputError
from episode_warehouse.frames.codec import VIDEO_REF

_REF = struct.Struct("<II")
_FIX = "re-materialize the partition (its TED, or its decoded stage)"
KEPT = 8  # decoders open at once in a process, over every reader, camera and thread
RUN_FRAMES = 64  # frames one decoding call returns at most


def ref_blob(video: int, frame: int) -> bytes:
    """The stored bytes of a row that is frame ``frame`` of video ``video``."""
    return VIDEO_REF + _REF.pack(video, frame)


def parse_ref(blob: bytes | memoryview, where: str) -> tuple[int, int]:
    """(video, frame) of a reference."""
    if len(blob) != len(VIDEO_REF) + _REF.size:
        raise CorruptInputError(
            f"a video reference of {len(blob)} bytes (12 expected)", subject=where, fix=_FIX
        )
    return _REF.unpack(bytes(blob[len(VIDEO_REF) :]))


class _Decoders:
    """The process's open decoders by (reader, video, thread), least recently used first,
    at most ``KEPT``. A decoder is only ever used by the thread it is keyed by; one closed here
    while its thread decodes stays alive until that call returns (its thread holds it), then
    that thread opens a new one."""

    def __init__(self) -> None:
        self._open: OrderedDict[tuple, tuple[object, object]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple):
        with self._lock:
            entry = self._open.get(key)
            if entry is None:
                return None
            self._open.move_to_end(key)
            return entry[0]

    def put(self, key: tuple, decoder: object, owner: object) -> None:
        with self._lock:  # the owner is kept with it: its id in the key is never reused
            self._open[key] = (decoder, owner)
            while len(self._open) > KEPT:
                self._open.popitem(last=False)

    def count(self) -> int:
        with self._lock:
            return len(self._open)

    def clear(self) -> None:
        """Forget every decoder (a forked child: its parent's share the file offsets)."""
        self._open = OrderedDict()
        self._lock = threading.Lock()


_OPEN = _Decoders()
os.register_at_fork(after_in_child=_OPEN.clear)


def thread_decoder(owner: object, video: Hashable, open_video: Callable[[], object]):
    """This thread's decoder of ``owner``'s video ``video`` from the process's bounded pool,
    opened by ``open_video()`` where the thread has none (it raises what it raises)."""
    key = (id(owner), video, threading.get_ident())
    decoder = _OPEN.get(key)
    if decoder is None:
        decoder = open_video()
        _OPEN.put(key, decoder, owner=owner)
    return decoder


def decode_indices(
    decoder, index: np.ndarray, subject: str, fix: str
) -> tuple[np.ndarray, np.ndarray]:
    """uint8 ``(N, C, H, W)`` frames number ``index`` (any order, repeats allowed) of the
    video ``decoder`` reads, and their presentation times in seconds, decoded in runs (see the
    module).

    Raises:
        CorruptInputError: frames that do not decode (naming ``subject``; ``fix`` says what to
            do).
    """
    out: np.ndarray | None = None
    pts = np.empty(len(index), np.float64)
    for rows in _runs(index):
        lo, hi = int(index[rows[0]]), int(index[rows[-1]]) + 1
        try:
            batch = decoder.get_frames_in_range(lo, hi)
        except (RuntimeError, IndexError, ValueError) as exc:
            raise CorruptInputError(
                f"frames {lo}..{hi - 1} do not decode ({str(exc).splitlines()[0]})",
                subject=subject,
                fix=fix,
            ) from None
        data = batch.data.numpy()
        if len(data) != hi - lo:
            raise CorruptInputError(
                f"frames {lo}..{hi - 1} asked, {len(data)} decoded", subject=subject, fix=fix
            )
        if out is None:
            out = np.empty((len(index), *data.shape[1:]), data.dtype)
        out[rows] = data[index[rows] - lo]
        pts[rows] = batch.pts_seconds.numpy()[index[rows] - lo]
    if out is None:
        raise CorruptInputError("no frame was asked for", subject=subject, fix=fix)
    return out, pts


def _runs(index: np.ndarray) -> list[np.ndarray]:
    """Positions of ``index`` grouped into decoding runs: sorted by frame, a new run wherever
    frames are not consecutive (a repeated frame stays in its run) or a run reaches
    ``RUN_FRAMES`` frames."""
    order = np.argsort(index, kind="stable")
    frames = index[order]
    runs, start = [], 0
    for i in range(1, len(frames) + 1):
        if (
            i == len(frames)
            or frames[i] - frames[i - 1] > 1
            or frames[i] - frames[start] >= RUN_FRAMES
        ):
            runs.append(order[start:i])
            start = i
    return runs


class VideoFiles:
    """The video files of one TED camera, opened on demand by each thread that reads them.

    Args:
        names: the files, by number (paths relative to the artifact's folder).
        source: ``source(name)``: what torchcodec opens (a local path, or a file-like object
            reading byte ranges from a bucket).
        where: the camera, for errors.
    """

    KEPT = KEPT

    def __init__(self, names: Sequence[str], source: Callable[[str], object], where: str) -> None:
        self.names, self.source, self.where = list(names), source, where

    def _decoder(self, video: int):
        if not 0 <= video < len(self.names):
            raise CorruptInputError(
                f"a reference to video {video}; the camera has {len(self.names)}",
                subject=self.where,
                fix=_FIX,
            )
        return thread_decoder(self, video, lambda: self._open(self.names[video]))

    def _open(self, name: str):
        from torchcodec.decoders import VideoDecoder

        try:
            return VideoDecoder(self.source(name), seek_mode="exact")
        except (RuntimeError, ValueError, OSError) as exc:
            raise CorruptInputError(
                f"cannot open the video ({str(exc).splitlines()[0]})",
                subject=f"{self.where} {name}",
                fix=_FIX,
            ) from None

    def frame(self, blob: bytes | memoryview, shape: tuple[int, ...], where: str) -> np.ndarray:
        """The pixels of the referenced frame, ``(C, H, W)`` uint8."""
        return self.frames([blob], shape, where)[0]

    def frames(
        self, blobs: Sequence[bytes | memoryview], shape: tuple[int, ...], where: str
    ) -> np.ndarray:
        """The pixels of the referenced frames, ``(N, C, H, W)`` uint8, each video's frames
        decoded in runs (:func:`decode_indices`)."""
        refs = np.array([parse_ref(blob, where) for blob in blobs], dtype=np.int64)
        out = np.empty((len(blobs), *shape), np.uint8)
        for video in np.unique(refs[:, 0]).tolist():
            mine = np.flatnonzero(refs[:, 0] == video)
            name = self.names[video] if 0 <= video < len(self.names) else str(video)
            pixels, _ = decode_indices(self._decoder(video), refs[mine, 1],
                                       f"{where} ({name})", _FIX)  # fmt: skip
            if pixels.shape[1:] != tuple(shape):
                raise CorruptInputError(
                    f"frames of {name} are {pixels.shape[1:]}, the camera's rows are "
                    f"{tuple(shape)}",
                    subject=where,
                    fix=_FIX,
                )
            out[mine] = pixels
        return out
