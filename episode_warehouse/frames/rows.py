"""The rows of one camera stored encoded: ``<key>.frames`` (every frame's bytes, back to back)
and ``<key>.offsets.npy`` (int64: frame ``i`` is bytes ``[offsets[i], offsets[i + 1])``), read
as an array of decoded frames.

``FrameRows`` is indexed like the decoded layout's array (``rows[i]``, ``rows[a:b]``,
``rows[ids]``) and returns the decoded pixels of the rows it picks, and only of those: each run
of consecutive rows is one read of its bytes (one byte range from a bucket), then each frame is
decoded (:func:`~episode_warehouse.frames.codec.decode_frame`). A folder's frames are
memory-mapped; a bucket's are read through the reader that fetched the offsets.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from episode_warehouse.errors import CorruptInputError
from episode_warehouse.file_maps import map_bytes, map_npy
from episode_warehouse.frames.codec import (
    VIDEO_REF,
    decode_frame,
    decode_frames_into,
    decode_preview,
    grey,
    pixels_last,
)
from episode_warehouse.frames.video import VideoFiles

_FIX = "re-materialize the partition (its TED, or its decoded stage)"

FRAMES_SUFFIX = ".frames"
OFFSETS_SUFFIX = ".offsets.npy"
CHECKSUMS_SUFFIX = ".crc32c.npy"  # each stored frame's CRC-32C (Castagnoli), uint32
ReadBytes = Callable[[int, int], bytes | memoryview | np.ndarray]


def is_frames_file(file: str) -> bool:
    """Whether a TED or decoded file holds encoded frames (``<key>.frames``)."""
    return file.endswith(FRAMES_SUFFIX)


def offsets_file(frames_file: str) -> str:
    """The offsets file beside an encoded frame file."""
    return frames_file.removesuffix(FRAMES_SUFFIX) + OFFSETS_SUFFIX


def checksums_file(frames_file: str) -> str:
    """The checksums file beside an encoded frame file."""
    return frames_file.removesuffix(FRAMES_SUFFIX) + CHECKSUMS_SUFFIX


def frame_checksums(data: np.ndarray | memoryview, offsets: np.ndarray) -> np.ndarray:
    """The CRC-32C of each frame of a frame file's bytes ``data`` (``offsets`` into it, from
    0), uint32: what the TED stage writes beside the file and what readers compare with."""
    import google_crc32c

    data = memoryview(np.ascontiguousarray(data)).cast("B")
    bounds = np.asarray(offsets, np.int64).tolist()
    # (its C extension takes bytes alone: a copy, ~2 us for a 30 KB frame)
    return np.array([google_crc32c.value(bytes(data[a:b])) for a, b in zip(bounds[:-1],
                                                                            bounds[1:],
                                                                            strict=True)],
                    dtype=np.uint32)  # fmt: skip


def check_offsets(offsets: np.ndarray, size: int, where: str) -> np.ndarray:
    """``offsets`` of a frame file of ``size`` bytes, when they can be its frames: int64, one
    dimension, starting at 0, never decreasing, ending at the file's size, and no empty frame
    but the last (an observation camera's extra row); checked whole when a camera is opened,
    before any frame is read. Damaged offsets read as frames of zeros, or as ranges past the
    file's end (a bucket then answered 416, six times over, as if it were unreachable).

    Raises:
        CorruptInputError: naming the file and the first offset that is wrong (terminal: the
            data is damaged, a retry reads it again).
    """
    problem = None
    if offsets.dtype != np.int64 or offsets.ndim != 1 or not len(offsets):
        problem = f"they are {offsets.dtype} of shape {offsets.shape}, not int64 [frames + 1]"
    elif offsets[0] != 0:
        problem = f"the first frame starts at byte {int(offsets[0])}, not 0"
    elif offsets[-1] != size:
        problem = f"they end at byte {int(offsets[-1])}; the frame file holds {size}"
    else:
        steps = np.diff(offsets)
        bad = np.flatnonzero(steps[:-1] <= 0)
        if (steps < 0).any():
            i = int(np.flatnonzero(steps < 0)[0])
            problem = f"frame {i} ends before it starts ({int(offsets[i])} > {int(offsets[i + 1])})"
        elif len(bad):
            problem = f"frame {int(bad[0])} of {len(steps)} is empty (only the last may be)"
    if problem is not None:
        raise CorruptInputError(
            f"the camera's frame offsets are damaged: {problem}", subject=where, fix=_FIX
        )
    return offsets


@dataclass(frozen=True)
class Decoded:
    """Frames of one file decoded in this batch: row ``rows[k]`` is ``array[places[k]]``
    (``rows`` sorted and distinct)."""

    rows: np.ndarray
    places: np.ndarray
    array: np.ndarray


class FrameRows:
    """Decoded rows of encoded frames (the calls every reader makes of a TED's rows are listed
    in :mod:`~episode_warehouse.frames.plain_rows`, whose ``PlainRows`` has them too).

    Args:
        offsets: int64, one more than the rows (``offsets[-1]`` is the end of the last frame);
            they may start past 0 (a window of a larger file: ``read`` takes file offsets).
        read: ``read(start, stop)``: the file's bytes ``[start, stop)``.
        row_shape, dtype: what each frame decodes to.
        where: the file, for errors.
        checksums: each row's CRC-32C as written (None: none kept); with ``verify``, every
            frame read is checked against it before it is decoded.
    """

    def __init__(
        self,
        offsets: np.ndarray,
        read: ReadBytes,
        row_shape: tuple[int, ...],
        dtype: np.dtype | str,
        where: str,
        cache: DecodedCache | None = None,
        videos: VideoFiles | None = None,
        checksums: np.ndarray | None = None,
        verify: bool = False,
    ) -> None:
        self.offsets = offsets
        self.checksums = checksums
        self.verify = verify and checksums is not None
        self.read = read
        self.row_shape = tuple(row_shape)
        self.dtype = np.dtype(dtype)
        self.where = where
        self.cache = DecodedCache() if cache is None else cache
        self.videos = videos  # a video camera's files (its rows are references into them)

    encoded = True  # a frame's stored bytes are a codec's

    @property
    def pixels_last(self) -> bool:
        """Whether a row decodes as ``(H, W, C)`` memory (see :func:`codec.pixels_last`)."""
        return pixels_last(self.row_shape)

    @property
    def shape(self) -> tuple[int, ...]:
        return (len(self), *self.row_shape)

    @property
    def ndim(self) -> int:
        return 1 + len(self.row_shape)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        """Every row decoded (``np.asarray(rows)``): rows x frame bytes of memory."""
        return self[:] if dtype is None else self[:].astype(dtype)

    def window(self, start: int, stop: int) -> FrameRows:
        """Rows ``[start, stop)`` as rows of their own (nothing is read)."""
        sums = self.checksums[start:stop] if self.checksums is not None else None
        return FrameRows(self.offsets[start : stop + 1], self.read, self.row_shape, self.dtype,
                         self.where, self.cache, self.videos, sums, self.verify)  # fmt: skip

    @classmethod
    def join(cls, parts: list[FrameRows]) -> FrameRows:
        """The rows of ``parts`` (one camera's windows, e.g. episodes fetched from a bucket)
        one after another: their stored bytes copied into one block (encoded: a frame's bytes,
        not its pixels), nothing decoded."""
        first = parts[0]
        data = np.concatenate([np.frombuffer(p.stored_bytes(0, len(p)), np.uint8) for p in parts])
        sizes = np.concatenate([np.diff(np.asarray(p.offsets, np.int64)) for p in parts])
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        sums = (np.concatenate([p.checksums for p in parts])
                if all(p.checksums is not None for p in parts) else None)  # fmt: skip
        # a cache of its own: its offsets are the join's, not the file's
        return cls(offsets, lambda a, b: data[a:b], first.row_shape, first.dtype, first.where,
                   None, first.videos, sums, first.verify)  # fmt: skip

    def check(self, blobs: list, rows: list[int]) -> None:
        """With ``verify``: each of ``blobs`` (rows ``rows``) has the CRC-32C written for it.

        Raises:
            CorruptInputError: a frame whose bytes changed since the TED stage wrote them.
        """
        sums = self.checksums
        if not self.verify or sums is None:
            return
        import google_crc32c

        for blob, row in zip(blobs, rows, strict=True):
            if google_crc32c.value(bytes(memoryview(blob).cast("B"))) != int(sums[row]):
                raise CorruptInputError(
                    "the stored frame's CRC-32C differs from the one written with it (bit rot, "
                    "or the file was altered)",
                    subject=f"{self.where} row {row}",
                    fix="re-materialize the ted stage of this partition (and the decoded stage "
                    "if its frame file is damaged too)",
                )

    def encoded_size(self, rows: np.ndarray | None = None) -> int:
        """The stored bytes of ``rows`` (default: all)."""
        sizes = np.diff(np.asarray(self.offsets, dtype=np.int64))
        return int(sizes.sum() if rows is None else sizes[rows].sum())

    def blob(self, row: int) -> bytes:
        """Row ``row``'s bytes as stored (a JPEG or PNG the source published: what a viewer
        serves as it is)."""
        row = self._row(row)
        return bytes(self.read(int(self.offsets[row]), int(self.offsets[row + 1])))

    def _row(self, row: int) -> int:
        n = len(self)
        if not -n <= row < n:
            raise IndexError(f"row {row} of {n}")
        return row + n if row < 0 else row

    def __getitem__(self, index) -> np.ndarray:
        if index is Ellipsis:
            index = slice(None)
        if isinstance(index, tuple):  # rows first, then the rest within them
            first, rest = (index[0], index[1:]) if index else (slice(None), ())
            rows = self[first]
            scalar = isinstance(first, int | np.integer) or (
                isinstance(first, np.ndarray) and first.ndim == 0
            )
            return rows[rest] if scalar else rows[(slice(None), *rest)]
        if isinstance(index, int | np.integer):
            return self._decode(np.array([self._row(int(index))]))[0]
        if isinstance(index, slice):
            return self._decode(np.arange(*index.indices(len(self))))
        ids = np.asarray(index)
        if ids.dtype == bool:
            ids = np.flatnonzero(ids)
        if ids.ndim == 0:
            return self[int(ids)]
        ids = ids.astype(np.int64, copy=False)
        flat = np.where(ids.reshape(-1) < 0, ids.reshape(-1) + len(self), ids.reshape(-1))
        if len(flat) and (flat.min() < 0 or flat.max() >= len(self)):
            raise IndexError(f"rows {int(flat.min())}..{int(flat.max())} of {len(self)}")
        return self._decode(flat).reshape(*ids.shape, *self.row_shape)

    def _decode(self, rows: np.ndarray) -> np.ndarray:
        """The decoded frames of ``rows`` (in range), through :meth:`read_into` (the batch
        read: each run of consecutive rows one read, each distinct frame decoded once); a
        pick of at most :attr:`DecodedCache.KEPT` rows takes the frames the cache holds and
        leaves its own there (a step's next frame is the next step's frame).

        A camera's frames come in the memory order the decoder gives them: a ``(C, H, W)``
        row is a view of ``(H, W, C)`` pixels (channels last, as JPEG and PNG hold them), so
        nothing is transposed here; ``np.ascontiguousarray`` makes them C-ordered where that
        is wanted, and a resize takes them as they are."""
        out = _empty_frames(len(rows), self)
        if len(rows) > DecodedCache.KEPT:  # a batch larger than the cache skips it
            self.read_into(rows, out)
            return out
        offsets = np.asarray(self.offsets)  # a plain view of the map: indexed in bulk
        keys = list(zip(offsets[rows].tolist(), offsets[rows + 1].tolist(), strict=True))
        missing = []
        for i, key in enumerate(keys):
            frame = self.cache.get(key)
            if frame is None:
                missing.append(i)
            else:
                out[i] = frame
        if missing:
            places = np.array(missing, dtype=np.int64)
            self.read_into(rows[places], out, places)
            for i in missing:
                self.cache.put(keys[i], np.array(out[i], order="K"))  # its memory order
        return out

    def stored_bytes(self, start: int, stop: int) -> memoryview:
        """Rows ``[start, stop)``'s bytes as stored, back to back."""
        data = self.read(int(self.offsets[start]), int(self.offsets[stop]))
        return memoryview(np.ascontiguousarray(data))

    def preview(self, row: int) -> np.ndarray:
        """Row ``row`` as a small grey image (an image decoded at reduced scale, a video's
        frame decoded whole)."""
        if self.videos is not None:
            return grey(np.asarray(self[row]))
        return decode_preview(self.blob(row), self.row_shape, self.dtype,
                              f"{self.where} row {row}")  # fmt: skip

    def read_into(
        self,
        wanted: np.ndarray,
        out: np.ndarray,
        positions: np.ndarray | None = None,
        memo: list[Decoded] | None = None,
    ) -> None:
        """Frames ``wanted`` (any rows, repeats allowed) into ``out[positions]`` (default:
        ``out[k]`` for the k-th), each distinct row decoded once per batch: a row met again
        (here, or in ``memo``: what the batch's other leaves of the same file decoded, to
        which this call adds its own) is copied from where it was written, consecutive rows
        as one copy (:func:`copy_runs`)."""
        wanted = np.asarray(wanted, dtype=np.int64)
        places = (np.arange(len(wanted), dtype=np.int64) if positions is None
                  else np.asarray(positions, dtype=np.int64))  # fmt: skip
        if len(wanted) == 1 and not memo:  # one frame (an item's pick): nothing to share
            self._decode_distinct(wanted, out, places)
            return
        decoded = [] if memo is None else memo
        todo = np.ones(len(wanted), dtype=bool)
        for done in decoded:
            at = np.minimum(np.searchsorted(done.rows, wanted), len(done.rows) - 1)
            hit = todo & (done.rows[at] == wanted)
            if hit.any():
                copy_runs(out, places[hit], done.array, done.places[at[hit]])
                todo &= ~hit
        rest = np.flatnonzero(todo)
        if not len(rest):
            return
        rows, first = np.unique(wanted[rest], return_index=True)
        first_places = places[rest[first]]
        self._decode_distinct(rows, out, first_places)
        sources = first_places[np.searchsorted(rows, wanted[rest])]
        again = sources != places[rest]  # a row wanted more than once in this call
        if again.any():
            copy_runs(out, places[rest][again], out, sources[again])
        decoded.append(Decoded(rows, first_places, out))

    def _decode_distinct(self, rows: np.ndarray, out: np.ndarray, positions: np.ndarray) -> None:
        """Rows ``rows`` (distinct, in range) decoded into ``out[positions]``, a buffer the
        caller owns (each a row of this camera's shape and dtype, in any memory order): each
        run of consecutive rows is one read of its bytes, then the frames go to the codec
        table together (:func:`~episode_warehouse.frames.codec.decode_frames_into`: one
        decoder call each, straight into its place). The cache is neither read nor filled (a
        batch decodes each of its frames once by itself)."""
        if not len(rows):
            return
        offsets = np.asarray(self.offsets)
        if len(rows) == 1:  # one frame: its bytes, no runs to find
            row = int(rows[0])
            blob = memoryview(self.read(int(offsets[row]), int(offsets[row + 1])))
            self._decode_blobs_into([blob], [row], out, [int(positions[0])])
            return
        order = np.argsort(rows, kind="stable")
        ordered = rows[order]
        first = np.flatnonzero(np.r_[True, np.diff(ordered) != 1])  # where each run starts
        last = np.r_[first[1:], len(ordered)] - 1
        bases = offsets[ordered[first]].tolist()
        ends = offsets[ordered[last] + 1].tolist()
        starts, stops = offsets[ordered].tolist(), offsets[ordered + 1].tolist()
        run_of = np.repeat(np.arange(len(first)), last - first + 1).tolist()
        data = [memoryview(self.read(a, b)) for a, b in zip(bases, ends, strict=True)]
        blobs = [data[r][a - bases[r] : b - bases[r]]
                 for r, a, b in zip(run_of, starts, stops, strict=True)]  # fmt: skip
        self._decode_blobs_into(blobs, ordered.tolist(), out, positions[order].tolist())

    def _decode_blobs_into(
        self, blobs: list[memoryview], rows: list[int], out: np.ndarray, places: list[int]
    ) -> None:
        """Frames ``blobs`` (rows ``rows``, checked first) into ``out[places]``: a video
        camera's decoded in runs, any other camera's by the codec table together."""
        self.check(blobs, rows)
        if self.videos is not None:
            for place, frame in zip(places, self._decode_blobs(blobs, rows), strict=True):
                out[place] = frame
            return
        decode_frames_into(blobs, out, places, self.row_shape, self.dtype,
                           lambda k: f"{self.where} row {rows[k]}")  # fmt: skip

    def _decode_blobs(self, blobs: list[memoryview], rows: list[int]) -> list[np.ndarray]:
        """The frames of ``blobs`` (rows ``rows``): the references into a video camera's
        files decoded together, in runs (``VideoFiles.frames``), any other one by one."""
        out: list[np.ndarray | None] = [None] * len(blobs)
        if self.videos is not None:
            refs = [k for k, blob in enumerate(blobs) if bytes(blob[:4]) == VIDEO_REF]
            if refs:
                where = f"{self.where} rows {rows[refs[0]]}..{rows[refs[-1]]}"
                frames = self.videos.frames([blobs[k] for k in refs], self.row_shape, where)
                for k, frame in zip(refs, frames, strict=True):
                    out[k] = frame
        return [
            self._decode_one(blob, row) if frame is None else frame
            for blob, row, frame in zip(blobs, rows, out, strict=True)
        ]

    def _decode_one(self, blob: bytes | memoryview | np.ndarray, row: int) -> np.ndarray:
        """One stored frame through the codec table (a video camera's references through its
        files)."""
        blob = memoryview(blob)  # a slice of a memory map, of fetched bytes: not copied
        where = f"{self.where} row {row}"
        if self.videos is not None and bytes(blob[:4]) == VIDEO_REF:
            return self.videos.frame(blob, self.row_shape, where)
        return decode_frame(blob, self.row_shape, self.dtype, where)


def copy_runs(target: np.ndarray, places: np.ndarray, source: np.ndarray, at: np.ndarray) -> None:
    """``target[places[k]] = source[at[k]]`` for every k, one slice copy for each run where
    both ``places`` and ``at`` step by one (a batch's next frames are its frames shifted by
    one: a run a slice)."""
    if not len(places):
        return
    breaks = np.flatnonzero((np.diff(places) != 1) | (np.diff(at) != 1)) + 1
    begins = np.concatenate([[0], breaks])
    ends = np.concatenate([breaks, [len(places)]])
    for begin, end, to, frm in zip(begins.tolist(), ends.tolist(), places[begins].tolist(),
                                   at[begins].tolist(), strict=True):  # fmt: skip
        target[to : to + end - begin] = source[frm : frm + end - begin]


def flat_view(array: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``array`` seen as ``shape``, never a copy (raises where its memory cannot be)."""
    view = array.view()
    view.shape = shape
    return view


def _empty_frames(n: int, rows: FrameRows) -> np.ndarray:
    """An array for ``n`` frames in the memory order the decoder writes (channels last where
    :func:`~episode_warehouse.frames.codec.pixels_last` says so), as a batch holds them."""
    if rows.pixels_last:
        c, h, w = rows.row_shape
        return np.empty((n, h, w, c), rows.dtype).transpose(0, 3, 1, 2)
    return np.empty((n, *rows.row_shape), rows.dtype)


class DecodedCache:
    """The last decoded frames of one frame file, by their byte range (a window of the file
    and the file itself share it): a step's ``("next", key)`` is the next step's frame, so a
    slice of N steps decodes N + 1 frames, not 2N. Bounded: ``KEPT`` frames (with three
    180x320 cameras, 16 MB per process). Empty frames are zeros, never kept."""

    KEPT = 32

    def __init__(self) -> None:
        self._frames: OrderedDict[tuple[int, int], np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def __getstate__(self) -> dict:
        return {}

    def __setstate__(self, state: dict) -> None:
        self.__init__()  # type: ignore[misc]

    def get(self, key: tuple[int, int]) -> np.ndarray | None:
        with self._lock:
            frame = self._frames.get(key)
            if frame is not None:
                self._frames.move_to_end(key)
            return frame

    def put(self, key: tuple[int, int], frame: np.ndarray) -> None:
        if key[0] == key[1]:
            return
        frame.flags.writeable = False  # handed out again: nobody may write into it
        with self._lock:
            self._frames[key] = frame
            while len(self._frames) > self.KEPT:
                self._frames.popitem(last=False)


class MappedFrames:
    """``read`` of a frame file on this machine: memory-mapped once, read-only, reopened after
    pickling (DataLoader workers map it themselves)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._map: np.ndarray | None = None

    def __getstate__(self) -> dict:
        return {"path": self.path, "_map": None}

    def __call__(self, start: int, stop: int) -> np.ndarray:
        if self._map is None:
            self._map = map_bytes(self.path)
        return self._map[start:stop]


def open_frames(
    frames_file: Path,
    row_shape: tuple[int, ...],
    dtype: np.dtype | str,
    videos: Sequence[str] = (),
    folder: Path | None = None,
    checksums: str | None = None,
    verify: bool = False,
) -> FrameRows:
    """The rows of an encoded frame file in a folder (its offsets read once, memory-mapped);
    ``videos``: a video camera's files, relative to ``folder`` (the artifact's); ``checksums``:
    its checksums file there (see :class:`FrameRows`)."""
    frames_file = Path(frames_file)
    where = offsets_file(frames_file.name)
    offsets = map_npy(frames_file.parent / where, _FIX).numpy()
    offsets.flags.writeable = False
    try:
        size = frames_file.stat().st_size
    except OSError as exc:
        raise CorruptInputError(
            f"the camera's frames cannot be read ({exc})", subject=str(frames_file), fix=_FIX
        ) from exc
    check_offsets(offsets, size, f"{frames_file} ({where})")
    files = None
    if videos:
        base = Path(folder) if folder is not None else frames_file.parent
        files = VideoFiles(videos, lambda name: str(base / name), str(frames_file))
    sums = None
    if checksums is not None:
        base = Path(folder) if folder is not None else frames_file.parent
        sums = map_npy(base / checksums, _FIX).numpy()
        if len(sums) != len(offsets) - 1:
            raise CorruptInputError(
                f"{len(sums)} checksums for {len(offsets) - 1} frames", subject=checksums, fix=_FIX
            )
    return FrameRows(offsets, MappedFrames(frames_file), row_shape, dtype, str(frames_file),
                     videos=files, checksums=sums, verify=verify)  # fmt: skip
