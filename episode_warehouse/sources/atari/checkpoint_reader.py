"""Read Dopamine checkpoint files: ``np.save`` arrays inside gzip streams.

Observation files are 7 GB uncompressed in the real data, so they are only ever streamed in
chunks of rows; the small elements (action, reward, terminal, counters) are loaded whole.
Inflate uses ISA-L (``isal``), 3-4x faster than zlib on these files.

A header is not trusted: every declared shape is bounded before anything is inflated, by what
the compressed file can hold at all (deflate's largest ratio, :data:`DEFLATE_MAX_RATIO`) and by
the observation rows (a small element's shape must be ``(capacity,)`` before it is read), so a
1.9 MB file declaring 500M rewards is refused from its first bytes.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, cast

import numpy as np
from isal import igzip
from isal.igzip_lib import IsalError

from episode_warehouse.errors import CorruptInputError
from episode_warehouse.guards.npy import NpyHeader
from episode_warehouse.guards.npy import read_header as read_npy_header
from episode_warehouse.sources.atari.dopamine_files import STORE_ELEMENTS, file_name

_REFETCH = "delete the file and materialize the raw stage again (it is re-downloaded)"
# deflate codes at most 258 bytes per 2 bits, so a gzip stream inflates to at most 1032x its
# size: a header declaring more than that is lying, whatever the stream then holds
DEFLATE_MAX_RATIO = 1032
_HEADER_SLACK = 1 << 16  # the .npy header and gzip framing
# isal's stubs declare IsalError as an instance; it is an exception class
_GZIP_ERRORS: tuple[type[BaseException], ...] = (
    EOFError,
    OSError,
    zlib.error,
    ValueError,
    cast(type[BaseException], IsalError),
)


def _read_header(fh: BinaryIO, path: Path) -> NpyHeader:
    """The header of the gzip stream ``fh`` (the one ``.npy`` header check,
    :mod:`~episode_warehouse.guards.npy`), bounded by what the compressed file can inflate to."""
    try:
        header = read_npy_header(
            fh,
            subject=str(path),
            fix=_REFETCH,
            file_bytes=DEFLATE_MAX_RATIO * path.stat().st_size + _HEADER_SLACK,
            what="the array header",
        )
    except _GZIP_ERRORS as exc:
        if isinstance(exc, CorruptInputError):
            raise
        raise CorruptInputError(
            f"not a gzip-compressed .npy array ({exc})", subject=str(path), fix=_REFETCH
        ) from exc
    return header


def read_header(path: Path) -> NpyHeader:
    """The array header of one checkpoint file, reading only its first bytes."""
    with igzip.open(path, "rb") as fh:
        return _read_header(fh, path)


def load_array(path: Path, shape: tuple[int, ...] | None = None) -> np.ndarray:
    """Load a small checkpoint element whole, checking that the stream ends where it should;
    with ``shape``, its header must declare that shape (checked before anything is inflated)."""
    try:
        with igzip.open(path, "rb") as fh:
            header = _read_header(fh, path)
            if shape is not None and header.shape != shape:
                raise CorruptInputError(
                    f"the array declares shape {header.shape}, expected {shape}",
                    subject=str(path),
                    fix="the checkpoint files come from different checkpoints; re-mirror them",
                )
            nbytes = int(np.prod(header.shape, dtype=np.int64)) * header.dtype.itemsize
            payload = fh.read(nbytes)
            trailing = fh.read(1)
    except _GZIP_ERRORS as exc:
        raise CorruptInputError(
            f"the gzip stream is corrupt or truncated ({exc})", subject=str(path), fix=_REFETCH
        ) from exc
    if len(payload) != nbytes or trailing:
        raise CorruptInputError(
            f"the array holds {len(payload)} bytes, its header says {nbytes}",
            subject=str(path),
            fix=_REFETCH,
        )
    return np.frombuffer(payload, dtype=header.dtype).reshape(header.shape)


def stream_rows(path: Path, chunk_rows: int) -> Iterator[tuple[int, np.ndarray]]:
    """Yield ``(first_slot, rows)`` chunks of a checkpoint array, never the whole file.

    The chunk buffer is reused between iterations: copy what you keep.

    Raises:
        CorruptInputError: bad gzip, a truncated stream, or trailing bytes.
    """
    try:
        with igzip.open(path, "rb") as fh:
            header = _read_header(fh, path)
            buf = np.empty((chunk_rows, *header.shape[1:]), dtype=header.dtype)
            view = memoryview(buf.reshape(-1).view(np.uint8))
            row_bytes = header.row_bytes
            start = 0
            while start < header.rows:
                n = min(chunk_rows, header.rows - start)
                want = n * row_bytes
                got = 0
                while got < want:
                    k = fh.readinto(view[got:want])
                    if not k:
                        raise EOFError(f"stream ended after {start + got // row_bytes} rows")
                    got += k
                yield start, buf[:n]
                start += n
            if fh.read(1):
                raise ValueError("trailing bytes after the array")
    except _GZIP_ERRORS as exc:
        raise CorruptInputError(
            f"the gzip stream is corrupt or truncated ({exc})", subject=str(path), fix=_REFETCH
        ) from exc


@dataclass(frozen=True)
class CheckpointMeta:
    """What the decoder needs of one checkpoint, without its observations.

    ``add_count`` is the stored value (the cursor for a final log); ``capacity`` is C.
    """

    suffix: int
    add_count: int
    invalid_range: np.ndarray
    capacity: int
    frame_shape: tuple[int, ...]
    action: np.ndarray
    reward: np.ndarray
    terminal: np.ndarray
    observation_path: Path

    @property
    def update_horizon(self) -> int:
        return int((self.add_count % self.capacity - self.invalid_range[0]) % self.capacity)

    @property
    def stack_size(self) -> int:
        return len(self.invalid_range) - self.update_horizon


def read_checkpoint_meta(folder: Path, suffix: int) -> CheckpointMeta:
    """Load and cross-check the small elements of checkpoint ``suffix`` in ``folder``.

    Raises:
        CorruptInputError: a missing element file, lengths that disagree, or counters that do
            not fit the arrays.
    """
    paths = {}
    for element in (*STORE_ELEMENTS, "add_count", "invalid_range"):
        path = folder / file_name(element, suffix)
        if not path.is_file():
            raise CorruptInputError(
                f"checkpoint {suffix} lacks its {element} file",
                subject=str(path),
                fix="mirror the complete checkpoint (all six files) or leave this suffix out "
                "of the checkpoint subset",
            )
        paths[element] = path
    obs = read_header(paths["observation"])
    if obs.dtype != np.uint8 or len(obs.shape) != 3:
        raise CorruptInputError(
            f"observation is {obs.dtype} {obs.shape}, expected uint8 frames (N, H, W)",
            subject=str(paths["observation"]),
            fix="the file is not a Dopamine observation checkpoint; re-mirror it",
        )
    capacity = obs.rows
    for element in ("action", "reward", "terminal"):  # before any is inflated
        declared = read_header(paths[element]).shape
        if declared != (capacity,):
            raise CorruptInputError(
                f"{element} has shape {declared} but observation has {capacity} rows",
                subject=str(paths[element]),
                fix="the checkpoint files come from different checkpoints; re-mirror them",
            )
    small = {e: load_array(paths[e], (capacity,)) for e in ("action", "reward", "terminal")}
    kinds = {"action": "iu", "reward": "fiu", "terminal": "iub"}
    for element, array in small.items():
        if array.dtype.kind not in kinds[element]:
            raise CorruptInputError(
                f"{element} has dtype {array.dtype}, expected "
                f"{'an integer' if element != 'reward' else 'a number'} type",
                subject=str(paths[element]),
                fix="the file is not a Dopamine checkpoint element; re-mirror the checkpoint",
            )
        if array.shape != (capacity,):
            raise CorruptInputError(
                f"{element} has shape {array.shape} but observation has {capacity} rows",
                subject=str(paths[element]),
                fix="the checkpoint files come from different checkpoints; re-mirror them",
            )
    add_count = load_array(paths["add_count"], ())
    if read_header(paths["invalid_range"]).rows > 64:  # stack + update horizon: a handful
        raise CorruptInputError(
            "invalid_range declares more than 64 slots",
            subject=str(paths["invalid_range"]),
            fix=_REFETCH,
        )
    invalid_range = load_array(paths["invalid_range"]).astype(np.int64)
    if add_count.shape != () or add_count.dtype.kind not in "iu" or int(add_count) < 0:
        raise CorruptInputError(
            f"add_count must be a non-negative integer scalar, found {add_count!r}",
            subject=str(paths["add_count"]),
        )
    meta = CheckpointMeta(
        suffix=suffix,
        add_count=int(add_count),
        invalid_range=invalid_range,
        capacity=capacity,
        frame_shape=obs.shape[1:],
        action=small["action"],
        reward=small["reward"],
        terminal=small["terminal"],
        observation_path=paths["observation"],
    )
    _check_counters(meta, paths["invalid_range"])
    return meta


def _check_counters(meta: CheckpointMeta, path: Path) -> None:
    """invalid_range must be the K+N slots around the cursor that add_count implies."""
    c = meta.capacity
    n = meta.update_horizon
    k = meta.stack_size
    expected = (meta.add_count % c - n + np.arange(k + n)) % c
    if c < 2 or n < 1 or k < 1 or not np.array_equal(expected, meta.invalid_range):
        raise CorruptInputError(
            f"add_count {meta.add_count} is inconsistent with the arrays "
            f"(capacity {c}, invalid_range {meta.invalid_range.tolist()[:8]})",
            subject=str(path),
            fix="the counters do not belong to these arrays; re-mirror the checkpoint",
        )
