"""A batch of slices of a TED, written straight into buffers the caller owns.

The rows layer of the read path: a batch is ``B`` slices of ``L`` steps, given as the TED rows
they start at (``starts``); every key's rows are gathered once for the whole batch (one
``np.take`` of the memory-mapped file into the caller's buffer), and an encoded camera's
frames are decoded straight into it, each distinct frame once: a step's ``("next", camera)``
is the next step's camera, so a slice of ``L`` steps decodes ``L + 1`` frames, and consecutive
slices of one episode share theirs. Nothing is assembled per slice and no frame is copied
between intermediate arrays.

The values are those of the TED's TensorDict indexed with the same rows (``open_ted`` and
:meth:`~episode_warehouse.ted.reader.TedReader.read`: ``("next", key)`` on an episode's last
step is the source's final observation, or zeros), a camera's pixels those of its decoder
(:mod:`episode_warehouse.frames.codec`); ``tests/episode_warehouse/loading/test_batch_read.py``
compares both ways on every source's layout.

Buffers: ``alloc(key, shape, dtype, channels_last)`` returns a tensor of that shape to fill (a
view of a DataLoader worker's shared-memory slot, or a fresh tensor). A camera of ``(C, H, W)``
rows is asked for ``channels_last``: its memory is ``(..., H, W, C)``, as JPEG and PNG decoders
give pixels, so nothing is transposed on the way (``.contiguous()`` reorders it, one copy).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from tensordict import TensorDict

from episode_warehouse.frames.rows import FrameRows
from episode_warehouse.ted.assemble import MappedRows
from episode_warehouse.ted.layout import ARRAY, NEXT_OF, UNSQUEEZE, ZEROS

Alloc = Callable[[tuple[str, ...], tuple[int, ...], torch.dtype, bool], torch.Tensor]


def fresh(key: tuple[str, ...], shape: tuple[int, ...], dtype: torch.dtype, channels_last: bool):
    """:data:`Alloc` of new tensors (outside a DataLoader worker)."""
    if channels_last:
        b, length, c, h, w = shape
        return torch.empty((b, length, h, w, c), dtype=dtype).permute(0, 1, 4, 2, 3)
    return torch.empty(shape, dtype=dtype)


def batch_leaves(
    rows: MappedRows, batch: int, length: int
) -> list[tuple[tuple[str, ...], tuple[int, ...], torch.dtype, bool]]:
    """``(key, shape, dtype, channels_last)`` of every key of a batch of ``batch`` slices of
    ``length`` steps of the TED ``rows`` reads, in the record's order."""
    out = []
    for name, entry in rows.ted.keys.items():
        key = tuple(name.split("/"))
        if entry["kind"] == ZEROS:
            shape, dtype = tuple(entry["shape"]), getattr(torch, entry["dtype"])
        elif "frames" in entry:
            shape = tuple(entry["frames"]["shape"])
            dtype = _torch_dtype(np.dtype(entry["frames"]["dtype"]))
        else:
            array = rows.file_rows(entry["file"])
            shape, dtype = tuple(array.shape[1:]), _torch_dtype(array.dtype)
            if entry["kind"] == UNSQUEEZE:
                shape = (*shape, 1)
        channels_last = "frames" in entry and len(shape) == 3
        out.append((key, (batch, length, *shape), dtype, channels_last))
    return out


def gather(rows: MappedRows, starts: np.ndarray, length: int, alloc: Alloc = fresh) -> TensorDict:
    """Slices ``[s, s + length)`` of the TED for each ``s`` in ``starts`` as one TensorDict of
    batch size ``(len(starts), length)``, every leaf written into ``alloc``'s buffer."""
    starts = np.asarray(starts, dtype=np.int64)
    index = starts[:, None] + np.arange(length, dtype=np.int64)  # (B, L) TED rows
    flat = index.reshape(-1)
    out = TensorDict(batch_size=[len(starts), length])
    last = rows.file_rows("next/done.npy")[flat].astype(bool)  # a step whose next is no step
    memo: dict[str, dict[int, np.ndarray]] = {}  # frame file -> row -> where it was decoded
    for key, shape, dtype, channels_last in batch_leaves(rows, len(starts), length):
        entry = rows.ted.keys["/".join(key)]
        buffer = alloc(key, shape, dtype, channels_last)
        target = _flat(buffer.numpy(), (len(flat), *shape[2:]))
        kind = entry["kind"]
        if kind == ZEROS:
            target[...] = 0
        elif kind == NEXT_OF:
            _next_rows(rows, entry, flat, last, target, memo)
        elif kind in (ARRAY, UNSQUEEZE):
            source = rows.file_rows(entry["file"])
            if isinstance(source, FrameRows):
                _decode(source, flat, target, memo.setdefault(entry["file"], {}))
            else:
                np.take(source, flat, axis=0, out=_flat(target, (len(flat), *source.shape[1:])))
        else:
            raise ValueError(f"unknown TED key kind {kind!r}")
        out.set(key, buffer)
    return out


def _next_rows(rows, entry, flat, last, target, memo) -> None:
    """``("next", key)``: the row after each step; on a last step the episode's final
    observation (``final/<key>.npy`` by the step's episode id) or zeros."""
    source = rows.file_rows(entry["file"])
    following = np.flatnonzero(~last)
    if isinstance(source, FrameRows):
        _decode(source, flat[following] + 1, target, memo.setdefault(entry["file"], {}),
                positions=following)  # fmt: skip
    else:
        target[following] = source[flat[following] + 1]
    ends = np.flatnonzero(last)
    if not len(ends):
        return
    if "final" in entry:
        episodes = rows.file_rows("episode.npy")[flat[ends]].astype(np.int64)
        target[ends] = rows.file_rows(entry["final"])[episodes]
    else:
        target[ends] = 0


def _decode(
    frames: FrameRows,
    wanted: np.ndarray,
    target: np.ndarray,
    decoded: dict[int, np.ndarray],
    positions: np.ndarray | None = None,
) -> None:
    """Frames ``wanted`` into ``target[positions]`` (default: ``target[k]`` for the k-th),
    each distinct row decoded once per batch: a row met again (here, or in the batch's other
    leaf of the same file) is copied from where it was written."""
    places = range(len(wanted)) if positions is None else positions.tolist()
    first: dict[int, int] = {}  # row -> the place it is decoded into
    for row, at in zip(wanted.tolist(), places, strict=True):
        if row not in decoded and row not in first:
            first[row] = at
    if first:
        rows, at = np.fromiter(first, np.int64), np.fromiter(first.values(), np.int64)
        frames.decode_into(rows, target, at)
        decoded.update((row, target[place]) for row, place in first.items())
    for row, place in zip(wanted.tolist(), places, strict=True):
        if first.get(row) != place:
            target[place] = decoded[row]


def _flat(array: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``array`` seen as ``shape``, never a copy (raises where its memory cannot be)."""
    view = array.view()
    view.shape = shape
    return view


def _torch_dtype(dtype: np.dtype) -> torch.dtype:
    return torch.from_numpy(np.zeros(0, dtype)).dtype
