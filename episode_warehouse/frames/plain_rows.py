"""Rows stored as they are (a memory-mapped ``.npy``, rows fetched from a bucket, a tensor)
under the calls of :class:`~episode_warehouse.frames.rows.FrameRows`.

A TED's per-step file is one of the two: frames stored encoded, or plain rows. Every reader
(the batch read, the assembled TensorDict, the audit, the viewer) calls the same methods on
either and never asks which it holds; what differs lives in the two classes:

- ``read_into(rows, out, positions, memo)``: the rows into memory the caller owns (encoded
  frames decoded there, each distinct one once a batch; plain rows copied by one ``take``);
- ``window(start, stop)``: rows of their own, nothing read;
- ``tensor.leaf_of(rows)``: the tensor a TensorDict holds (a ``FrameTensor`` of encoded
  frames decodes when indexed; plain rows are their own tensor, :meth:`PlainRows.tensor`);
- ``stored_bytes(start, stop)``: the bytes as stored (what a signature hashes);
- ``blob(row)``: a frame's stored JPEG or PNG, None where rows keep no such bytes;
- ``preview(row)``: a frame as a small grey image (the audit's look at a camera);
- ``encoded``: whether a frame's stored bytes are a codec's (the audit checks those bytes);
- ``pixels_last``: whether a row comes as ``(H, W, C)`` memory (a decoder's order).
"""

from __future__ import annotations

import numpy as np
import torch

from episode_warehouse.frames.codec import grey
from episode_warehouse.frames.rows import FrameRows, flat_view


class PlainRows:
    """The rows of ``array`` (anything indexed like an array: a NumPy memory map, a torch
    tensor, a bucket file's rows) under :class:`FrameRows`' calls."""

    encoded = False
    pixels_last = False  # rows in the memory order they are stored in
    videos = None
    checksums = None

    def __init__(self, array) -> None:
        self.array = array

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.array.shape)

    @property
    def row_shape(self) -> tuple[int, ...]:
        return tuple(self.array.shape[1:])

    @property
    def dtype(self) -> np.dtype:
        dtype = self.array.dtype
        if isinstance(dtype, torch.dtype):
            return torch.empty(0, dtype=dtype).numpy().dtype
        return dtype

    @property
    def ndim(self) -> int:
        return len(self.array.shape)

    def __len__(self) -> int:
        return len(self.array)

    def __getitem__(self, index) -> np.ndarray:
        return _numpy(self._index(index))

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        whole = self[:]
        return whole if dtype is None else whole.astype(dtype)

    def _index(self, index):
        if isinstance(self.array, torch.Tensor) and isinstance(index, np.ndarray):
            return self.array[torch.from_numpy(index)]
        return self.array[index]

    def window(self, start: int, stop: int) -> PlainRows:
        return PlainRows(self.array[start:stop])

    def read_into(
        self,
        rows: np.ndarray,
        out: np.ndarray,
        positions: np.ndarray | None = None,
        memo: list | None = None,
    ) -> None:
        """``out[positions[k]] = self[rows[k]]`` (default: ``out[k]``), one gather."""
        rows = np.asarray(rows, dtype=np.int64)
        if positions is None and isinstance(self.array, np.ndarray):
            target = flat_view(out, (len(rows), *self.row_shape))
            np.take(self.array, rows, axis=0, out=target)
            return
        values = self[rows]
        if positions is None:
            out[: len(rows)] = values.reshape(out[: len(rows)].shape)
        else:
            out[positions] = values

    @classmethod
    def join(cls, parts: list[PlainRows]) -> PlainRows:
        """The rows of ``parts`` one after another (copied into one array)."""
        return cls(np.concatenate([p[:] for p in parts]))

    def tensor(self) -> torch.Tensor:
        """The rows as a tensor (a memory map's own memory: nothing copied)."""
        if isinstance(self.array, torch.Tensor):
            return self.array
        if isinstance(self.array, np.ndarray):
            return torch.from_numpy(self.array)
        return torch.from_numpy(self[:])  # a bucket file's rows: fetched

    def stored_bytes(self, start: int, stop: int) -> memoryview:
        return memoryview(np.ascontiguousarray(self[start:stop])).cast("B")

    def blob(self, row: int) -> None:
        """None: plain rows keep no published frame bytes."""
        return None

    def preview(self, row: int) -> np.ndarray:
        return grey(np.asarray(self[row]))


Rows = PlainRows | FrameRows  # a TED file's rows: plain, or frames stored encoded


def join_rows(parts: list[Rows]) -> Rows:
    """One file's rows of several windows (episodes), one after another, as one kind of rows
    (the windows of one file are all plain or all encoded)."""
    if all(isinstance(p, FrameRows) for p in parts):
        return FrameRows.join(parts)  # type: ignore[arg-type]
    return PlainRows.join(parts)  # type: ignore[arg-type]


def _numpy(values) -> np.ndarray:
    return values.numpy() if isinstance(values, torch.Tensor) else np.asarray(values)
