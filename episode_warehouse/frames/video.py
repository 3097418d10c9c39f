"""Frames kept in the source's video files (LeRobot v3's MP4s), referenced, decoded where read.

A row of a video camera is stored as a reference: ``EWVR`` then the video's number in the
camera's list of files and the frame's index in it (12 bytes). The files are kept beside the
camera's frame file (``videos/<name>``, linked from the source, never re-encoded), and a frame
is decoded with torchcodec's exact seek: the frame the decoded stage checked against
lerobot's timestamps, so the pixels equal the decoded layout's (tests compare them, and with
lerobot's own ``LeRobotDataset``).

A decoder is never shared between threads: FFmpeg's decoder state is not thread-safe, and a
viewer answering several frame requests at once, or statistics counted on a thread per core,
crashed the process (exit 139) when two threads seeked one decoder. Each thread opens its own;
the decoders of a process are bounded all the same: at most ``VideoFiles.KEPT`` open at once
over every thread and camera (the least recently used is closed; TorchRL keeps at most 8),
where lerobot's unbounded cache reached 34.9 GB per worker (lerobot PR #3614).
"""

from __future__ import annotations

import os
import struct
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence

import numpy as np

from episode_warehouse.errors import CorruptInputError
from episode_warehouse.frames.codec import VIDEO_REF

_REF = struct.Struct("<II")
_FIX = "re-materialize the partition (its TED, or its decoded stage)"


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
    """The process's open decoders by (camera, video, thread), least recently used first,
    at most ``VideoFiles.KEPT``. A decoder is only ever used by the thread it is keyed by;
    one closed here while its thread decodes stays alive until that call returns (its thread
    holds it), then that thread opens a new one."""

    def __init__(self) -> None:
        self._open: OrderedDict[tuple[int, int, int], tuple[object, object]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[int, int, int]):
        with self._lock:
            entry = self._open.get(key)
            if entry is None:
                return None
            self._open.move_to_end(key)
            return entry[0]

    def put(self, key: tuple[int, int, int], decoder: object, owner: object) -> None:
        with self._lock:  # the owner is kept with it: its id in the key is never reused
            self._open[key] = (decoder, owner)
            while len(self._open) > VideoFiles.KEPT:
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


class VideoFiles:
    """The video files of one camera, opened on demand by each thread that reads them.

    Args:
        names: the files, by number (paths relative to the artifact's folder).
        source: ``source(name)``: what torchcodec opens (a local path, or a file-like object
            reading byte ranges from a bucket).
        where: the camera, for errors.
    """

    KEPT = 8  # decoders open at once in a process, over every camera and thread

    def __init__(self, names: Sequence[str], source: Callable[[str], object], where: str) -> None:
        self.names, self.source, self.where = list(names), source, where

    def _decoder(self, video: int):
        from torchcodec.decoders import VideoDecoder

        if not 0 <= video < len(self.names):
            raise CorruptInputError(
                f"a reference to video {video}; the camera has {len(self.names)}",
                subject=self.where,
                fix=_FIX,
            )
        key = (id(self), video, threading.get_ident())  # this thread's own decoder
        decoder = _OPEN.get(key)
        if decoder is not None:
            return decoder
        name = self.names[video]
        try:
            decoder = VideoDecoder(self.source(name), seek_mode="exact")
        except (RuntimeError, ValueError, OSError) as exc:
            raise CorruptInputError(
                f"cannot open the video ({str(exc).splitlines()[0]})",
                subject=f"{self.where} {name}",
                fix=_FIX,
            ) from None
        _OPEN.put(key, decoder, owner=self)
        return decoder

    def frame(self, blob: bytes | memoryview, shape: tuple[int, ...], where: str) -> np.ndarray:
        """The pixels of the referenced frame, ``(C, H, W)`` uint8."""
        video, index = parse_ref(blob, where)
        decoder = self._decoder(video)
        try:
            pixels = decoder.get_frame_at(index).data.numpy()
        except (RuntimeError, IndexError, ValueError) as exc:
            raise CorruptInputError(
                f"frame {index} of {self.names[video]} does not decode "
                f"({str(exc).splitlines()[0]})",
                subject=where,
                fix=_FIX,
            ) from None
        if pixels.shape != tuple(shape):
            raise CorruptInputError(
                f"frame {index} of {self.names[video]} is {pixels.shape}, the camera's rows "
                f"are {tuple(shape)}",
                subject=where,
                fix=_FIX,
            )
        return pixels
