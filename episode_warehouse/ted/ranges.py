"""The rows of selected episodes of a TED whose files are not on this machine (a bucket's),
fetched as byte ranges through its :class:`~episode_warehouse.storage.Artifact`.

A TED's per-step files are ``.npy`` arrays whose rows are the steps of all episodes in order,
so the steps ``[start, start + length)`` of one episode are one contiguous byte range of each
file (one more row of the observation files, for ``("next", "observation")``). Files whose
rows are at most ``BLOCKED_ROW_BYTES`` (actions, rewards, flags, states, a language embedding)
are read in aligned blocks of at most ``BLOCK_ROWS`` rows and ``BLOCK_BYTES`` kept in memory,
so an episode costs one request per image file, not one per key (a 2 KB-a-row embedding cost
each episode a request of its own: #72); headers are read once per file. An encoded camera's
frames of an episode are one range of its frame file too (its offsets are read whole, once: 8
bytes a frame), decoded when indexed; a single frame picked by :meth:`RangeRows.file_rows` is
one range of its own bytes. The fetched rows are assembled by the same code that opens a
memory-mapped TED (:func:`~episode_warehouse.ted.assemble.assemble`), so an episode read here
equals the same rows of the downloaded TED.

A RangeRows reads the version whose record it opened, even after the partition is
republished: a replaced version stays in the bucket for a day. Past that its objects are gone
and a read raises :class:`~episode_warehouse.errors.StaleSelectionError`.
"""

from __future__ import annotations

import io
import threading
from collections import OrderedDict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch
from tensordict import TensorDictBase

from episode_warehouse.errors import CorruptInputError
from episode_warehouse.frames.plain_rows import PlainRows
from episode_warehouse.frames.rows import FrameRows, check_offsets, offsets_file
from episode_warehouse.frames.video import VideoFiles
from episode_warehouse.guards.npy import header_length, parse_header
from episode_warehouse.settings import Settings
from episode_warehouse.storage import Artifact
from episode_warehouse.ted.fetched import FetchedRows
from episode_warehouse.ted.files import checksum_files, files_of, final_files_of, frame_files
from episode_warehouse.ted.layout import EPISODES
from episode_warehouse.ted.record import TedRecord
from episode_warehouse.threads import TRANSFER_THREADS

_REBUILD = "re-materialize the ted stage of this partition"
_HEADER_BYTES = 4096  # one read holds an .npy header (a decoded array's is one page); longer: two
BLOCKED_ROW_BYTES = 4096  # rows up to this size are read in blocks; larger ones by episode
BLOCK_ROWS = 16384  # a block of a 17-byte-a-row TED's small files: ~280 KB in all
BLOCK_BYTES = 1 << 20  # and at most 1 MiB (512 rows of a 2 KB embedding)
_BLOCKS_KEPT = 64  # at most 64 MiB of blocks a reader
# steps a stream fetches ahead of the one it yields (their requests overlap): a batch of 32
# 8-step slices spans 7 episodes of 40 steps, and 4 episodes ahead left it waiting (#72)
READ_AHEAD_STEPS = 1024


class Header(NamedTuple):
    """An ``.npy`` file's header: where its rows begin, their dtype, the array's shape, and
    the bytes of one row."""

    offset: int
    dtype: np.dtype
    shape: tuple[int, ...]
    row: int


class RangeRows:
    """The TED version ``record`` of ``artifact`` read by ranges; ``bytes_fetched`` counts the
    bytes."""

    read_ahead = READ_AHEAD_STEPS

    def __init__(self, artifact: Artifact, record: dict, ted: TedRecord) -> None:
        self.artifact, self.record, self.ted = artifact, record, ted
        self.rows = self.ted.rows
        self.step_files = files_of(self.ted)
        self.final_files = final_files_of(self.ted)  # one row per episode: read whole, once
        self.frames = frame_files(self.ted)  # encoded cameras: file -> (row shape, dtype)
        self.checksums = checksum_files(self.ted)
        self.verify = Settings.from_env().verify_frames
        self._offsets: dict[str, np.ndarray] = {}
        self._checksums: dict[str, np.ndarray] = {}
        self._videos: dict[str, VideoFiles] = {}
        self._finals: dict[str, torch.Tensor] = {}
        self.bytes_fetched = 0
        self._lock = threading.Lock()
        # one fetch of a header, block or offsets at a time: [lock, threads using it] by key,
        # kept while a fetch of it is in flight only
        self._filling: dict[object, list] = {}
        self._headers: dict[str, Header] = {}
        self._blocks: OrderedDict[tuple[str, int], torch.Tensor] = OrderedDict()
        self._pool: ThreadPoolExecutor | None = None

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_videos"] = {}
        state.update(_lock=None, _filling={}, _pool=None, _blocks=OrderedDict())
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def _read(self, file: str, start: int, stop: int) -> bytes:
        data = self.artifact.read_range(self.record, file, start, stop)
        with self._lock:
            self.bytes_fetched += len(data)
        return data

    def episodes(self) -> pa.Table:
        """The TED's episodes table (episode, start, length, ...)."""
        return pq.read_table(
            io.BytesIO(self._read(EPISODES, 0, self.artifact.size(self.record, EPISODES)))
        )

    def _header(self, file: str) -> Header:
        known = self._headers.get(file)
        if known is not None:
            return known
        with self._once(("header", file)):
            return self._read_header(file)

    def _read_header(self, file: str) -> Header:
        if file not in self._headers:
            size = self.artifact.size(self.record, file)
            where, fix = f"{self.artifact.url} {file}", _REBUILD
            first = self._read(file, 0, min(_HEADER_BYTES, size))
            end = header_length(first[:12], subject=where, fix=fix)
            if len(first) < end <= size:  # a longer header: fetch the rest
                first += self._read(file, len(first), end)
            head = parse_header(first, subject=where, fix=fix, data_bytes=size - end)
            row = int(np.prod(head.shape[1:], dtype=np.int64)) * head.dtype.itemsize
            self._headers[file] = Header(head.offset, head.dtype, head.shape, row)
        return self._headers[file]

    def _frame_offsets(self, file: str) -> np.ndarray:
        """The offsets of an encoded camera's frames, read whole once (read-ahead threads
        asking at once wait for the first one's read)."""
        known = self._offsets.get(file)
        if known is not None:
            return known
        with self._once(("offsets", file)):
            return self._read_offsets(file)

    def _read_offsets(self, file: str) -> np.ndarray:
        if file not in self._offsets:
            name = offsets_file(file)
            offsets = self._range(name, 0, self._header(name).shape[0]).numpy()
            size = self.artifact.size(self.record, file)  # from the record: no request
            self._offsets[file] = check_offsets(offsets, size, f"{self.artifact.url} {name}")
        return self._offsets[file]

    def _frame_rows(self, file: str) -> FrameRows:
        """Every frame of ``file``; indexing reads the ranges of the frames it picks."""
        shape, dtype, videos = self.frames[file]
        where = f"{self.artifact.url} {file}"
        if file not in self._videos:  # one set of decoders per camera (bounded)
            self._videos[file] = VideoFiles(videos, lambda name: RangeFile(self, name), where)
        offsets = self._frame_offsets(file)
        sums = None
        if self.verify and file in self.checksums:
            sums = self._frame_checksums(file, len(offsets) - 1)
        return FrameRows(
            offsets,
            lambda start, stop: self._read(file, start, stop),
            shape,
            dtype,
            where,
            videos=self._videos[file] if videos else None,
            checksums=sums,
            verify=self.verify,
        )

    def _frame_checksums(self, file: str, frames: int) -> np.ndarray:
        """An encoded camera's CRC-32C file, fetched whole once per reader (4 bytes a frame;
        each episode's fetch fetched it again before)."""
        name = self.checksums[file]
        with self._once(("checksums", file)):
            if name not in self._checksums:
                sums = self._range(name, 0, self._header(name).shape[0]).numpy()
                if len(sums) != frames:
                    raise CorruptInputError(
                        f"{len(sums)} checksums for {frames} frames",
                        subject=f"{self.artifact.url} {name}", fix=_REBUILD,
                    )  # fmt: skip
                self._checksums[name] = sums
        return self._checksums[name]

    def _frame_window(self, file: str, start: int, stop: int) -> FrameRows:
        """Frames ``[start, stop)`` fetched as one range, decoded when indexed."""
        rows = self._frame_rows(file)
        stop = min(stop, len(rows))
        offsets = rows.offsets[start : stop + 1]
        base = int(offsets[0])
        data = self._read(file, base, int(offsets[-1])) if stop > start else b""
        sums = rows.checksums[start:stop] if rows.checksums is not None else None
        return FrameRows(offsets, lambda a, b: data[a - base : b - base], rows.row_shape,
                         rows.dtype, rows.where, rows.cache, rows.videos, sums,
                         rows.verify)  # fmt: skip

    def _rows(self, file: str, start: int, stop: int) -> torch.Tensor:
        stop = min(stop, self._header(file).shape[0])
        if self._block_rows(file) and stop > start:
            return self._blocked(file, start, stop)
        return self._range(file, start, stop)

    def _block_rows(self, file: str) -> int:
        """Rows of one of ``file``'s blocks (0: a file read by episode; its header is read)."""
        if file in self.frames:
            return 0
        row = self._header(file).row
        return min(BLOCK_ROWS, BLOCK_BYTES // max(row, 1)) if row <= BLOCKED_ROW_BYTES else 0

    def _cached(self, file: str, start: int, stop: int) -> bool:
        """Whether rows ``[start, stop)`` of ``file`` are in memory (no request needed)."""
        if file not in self._headers:
            return False
        per_block = self._block_rows(file)
        if not per_block:
            return False
        stop = min(stop, self._headers[file].shape[0])
        blocks = range(start // per_block, (max(stop, start + 1) - 1) // per_block + 1)
        return all((file, b) in self._blocks for b in blocks)

    def _blocked(self, file: str, start: int, stop: int) -> torch.Tensor:
        """Rows of a blocked file from its cached blocks (a copy: callers may write to it)."""
        per_block = self._block_rows(file)
        first, last = start // per_block, (stop - 1) // per_block
        parts = [self._block(file, b, per_block) for b in range(first, last + 1)]
        joined = parts[0] if len(parts) == 1 else torch.cat(parts)
        base = first * per_block
        return joined[start - base : stop - base].clone()

    @contextmanager
    def _once(self, key: object) -> Iterator[None]:
        """Held while ``key`` (a header, block or offsets) is fetched: threads wanting the same
        one wait, then find it kept. The key's lock lives while a thread holds or waits for it
        (a long stream fetches millions of blocks; their locks do not stay)."""
        with self._lock:
            entry = self._filling.get(key)
            if entry is None:
                entry = self._filling[key] = [threading.Lock(), 0]
            entry[1] += 1
        try:
            with entry[0]:
                yield
        finally:
            with self._lock:
                entry[1] -= 1
                if entry[1] == 0:
                    del self._filling[key]

    def _block(self, file: str, block: int, per_block: int) -> torch.Tensor:
        key = (file, block)
        with self._once(key):
            return self._kept_block(file, block, per_block)

    def _kept_block(self, file: str, block: int, per_block: int) -> torch.Tensor:
        key = (file, block)
        with self._lock:
            cached = self._blocks.get(key)
            if cached is not None:
                self._blocks.move_to_end(key)
                return cached
        rows = self._header(file).shape[0]
        tensor = self._range(file, block * per_block, min((block + 1) * per_block, rows))
        with self._lock:
            self._blocks[key] = tensor
            while len(self._blocks) > _BLOCKS_KEPT:
                self._blocks.popitem(last=False)
        return tensor

    def _range(self, file: str, start: int, stop: int) -> torch.Tensor:
        offset, dtype, shape, row = self._header(file)
        data = self._read(file, offset + start * row, offset + stop * row) if stop > start else b""
        array = np.frombuffer(bytearray(data), dtype=dtype).reshape(stop - start, *shape[1:])
        return torch.from_numpy(array)

    def file_rows(self, file: str) -> PlainRows | FrameRows:
        return self._frame_rows(file) if file in self.frames else PlainRows(FileRows(self, file))

    def read(self, start: int, length: int) -> TensorDictBase:
        """Steps ``[start, start + length)`` as the TED's TensorDict (``("next",
        "observation")`` zeros on the last step, as in the memory-mapped TED)."""
        return self.fetch(start, length).assembled()

    def fetch(self, start: int, length: int) -> FetchedRows:
        """Steps ``[start, start + length)`` fetched: one range per per-step file (requests
        in parallel), the final files whole (once)."""

        def fetch(file: str) -> tuple[str, PlainRows | FrameRows]:
            if file in self.frames:  # observations: one frame more
                return file, self._frame_window(file, start, start + length + 1)
            # observation files: one row more
            extra = 1 if self._header(file).shape[0] == self.rows + 1 else 0
            return file, PlainRows(self._rows(file, start, start + length + extra))

        remote = [f for f in self.step_files if not self._cached(f, start, start + length + 1)]
        tensors: dict[str, PlainRows | FrameRows] = {}
        if len(remote) > 1:  # requests in parallel; rows of cached blocks need no thread
            with self._lock:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(
                        TRANSFER_THREADS, thread_name_prefix="ted-ranges"
                    )
            tensors.update(self._pool.map(fetch, remote))
        tensors.update(fetch(f) for f in self.step_files if f not in tensors)
        for file in self.final_files:
            if file not in self._finals:
                self._finals[file] = self._range(file, 0, self._header(file).shape[0])
            tensors[file] = PlainRows(self._finals[file])
        return FetchedRows(self.ted, tensors, length, frozenset(self.final_files))


class FileRows:
    """The rows of one file of a :class:`RangeRows`, indexed like an array (``rows[ids]``,
    ``rows[3]``, ``rows[a:b]``): each run of consecutive rows is one range request."""

    def __init__(self, ranges: RangeRows, file: str) -> None:
        self.ranges, self.file = ranges, file
        self.shape = ranges._header(file).shape
        self.dtype = ranges._header(file).dtype

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, index) -> np.ndarray:
        if isinstance(index, slice):
            start, stop, step = index.indices(self.shape[0])
            return self.ranges._range(self.file, start, stop).numpy()[::step]
        ids = np.asarray(index, dtype=np.int64)
        flat = np.where(ids.reshape(-1) < 0, ids.reshape(-1) + self.shape[0], ids.reshape(-1))
        if len(flat) == 0:
            return np.empty((*ids.shape, *self.shape[1:]), self.dtype)
        order = np.argsort(flat, kind="stable")
        ordered = flat[order]
        breaks = np.flatnonzero(np.diff(ordered) > 1) + 1
        parts = []
        for run in np.split(ordered, breaks):
            block = self.ranges._range(self.file, int(run[0]), int(run[-1]) + 1).numpy()
            parts.append(block[run - run[0]])
        out = np.empty((len(flat), *self.shape[1:]), self.dtype)
        out[order] = np.concatenate(parts)
        return out.reshape(*ids.shape, *self.shape[1:])


class RangeFile(io.RawIOBase):
    """One file of a :class:`RangeRows`'s version as a read-only file object, each read one
    byte range (what a video decoder reads of an MP4 on a bucket: the index, then the frames it
    seeks to, never the whole file)."""

    def __init__(self, ranges: RangeRows, file: str) -> None:
        super().__init__()
        self.ranges, self.file = ranges, file
        self.size = ranges.artifact.size(ranges.record, file)
        self.position = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.position, io.SEEK_END: self.size}[whence]
        self.position = max(0, base + offset)
        return self.position

    def readinto(self, buffer) -> int:
        stop = min(self.size, self.position + len(buffer))
        if stop <= self.position:
            return 0
        data = self.ranges._read(self.file, self.position, stop)
        buffer[: len(data)] = data
        self.position += len(data)
        return len(data)
