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

Memory: :func:`batch_buffers` says what each leaf needs (a :class:`Buffer`); the caller gives
the memory (a DataLoader worker's shared-memory slot, or fresh bytes) and :func:`view_of` makes
the leaves of it. A camera of ``(C, H, W)`` rows is held ``channels_last``: its memory is
``(..., H, W, C)``, as JPEG and PNG decoders give pixels, so nothing is transposed on the way
(``.contiguous()`` reorders it, one copy). Where no step but a slice's last ends its episode
(always, for slices of one episode), ``("next", camera)`` is no copy either: the camera's
buffer holds ``L + 1`` frames a slice and both leaves are views of it, rows ``[0, L)`` and
``[1, L + 1)``, the last row of a slice holding what its last step's next reads.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Protocol

import numpy as np
import torch
from tensordict import TensorDict

from episode_warehouse.batches.buffers import Buffer, fresh, view_of
from episode_warehouse.frames.codec import pixels_last
from episode_warehouse.frames.plain_rows import Rows
from episode_warehouse.frames.rows import Decoded, flat_view
from episode_warehouse.ted.layout import ARRAY, NEXT_OF, UNSQUEEZE, ZEROS
from episode_warehouse.ted.record import TedRecord

Key = tuple[str, ...]


class TedRows(Protocol):
    """What a batch is gathered from: a TED's record and its files' rows (memory-mapped:
    ``MappedRows``; episodes fetched from a bucket: ``FetchedRows``)."""

    ted: TedRecord

    def file_rows(self, file: str) -> Rows: ...


def batch_buffers(
    rows: TedRows, starts: np.ndarray, length: int, share: bool = True
) -> list[Buffer]:
    """The :class:`Buffer` of every key of the batch of slices ``[s, s + length)`` of the TED
    ``rows`` reads, one for each ``s`` in ``starts``, in the record's order; with ``share``
    a camera and its next rows are views of one memory where they can be (see the module),
    else each leaf has memory of its own."""
    batch = len(starts)
    last = _last_steps(rows, starts, length)
    shares = share and not last[:, :-1].any()  # no episode ends inside a slice
    finals = {e["file"] for e in rows.ted.keys.values() if "final" in e}  # read apart
    cameras = {e["file"]: name for name, e in rows.ted.keys.items()
               if e["kind"] == ARRAY and "frames" in e and e.get("rows_plus_one")
               and e["file"] not in finals}  # fmt: skip
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
        buffer = Buffer(
            key, (batch, length, *shape), dtype, "frames" in entry and pixels_last(shape)
        )
        camera = cameras.get(entry.get("file", ""))
        if shares and camera is not None:
            if entry["kind"] == ARRAY:
                buffer = replace(buffer, rows=length + 1)
            elif entry["kind"] == NEXT_OF:
                buffer = replace(buffer, rows=length + 1, skip=1, owner=tuple(camera.split("/")))
        out.append(buffer)
    return out


def gather(
    rows: TedRows,
    starts: np.ndarray,
    length: int,
    buffers: list[Buffer] | None = None,
    memory: dict[Key, torch.Tensor] | None = None,
) -> TensorDict:
    """Slices ``[s, s + length)`` of the TED for each ``s`` in ``starts`` as one TensorDict of
    batch size ``(len(starts), length)``, its leaves views of ``memory`` (uint8 tensors by
    owner key, of ``buffers``, those of :func:`batch_buffers`; default: new memory)."""
    starts = np.asarray(starts, dtype=np.int64)
    buffers = batch_buffers(rows, starts, length) if buffers is None else buffers
    memory = fresh(buffers) if memory is None else memory
    index = starts[:, None] + np.arange(length, dtype=np.int64)  # (B, L) TED rows
    flat = index.reshape(-1)
    last = _last_steps(rows, starts, length).reshape(-1)
    out = TensorDict(batch_size=[len(starts), length])
    memo: dict[str, list[Decoded]] = {}  # frame file -> what the batch decoded of it
    for buffer in buffers:
        entry = rows.ted.keys["/".join(buffer.key)]
        leaf = view_of(memory[buffer.owner or buffer.key], buffer)
        out.set(buffer.key, leaf)
        if buffer.owner is not None:
            continue  # a view of the camera's rows, filled with them
        kind = entry["kind"]
        if buffer.rows:  # the camera and its next rows: L + 1 rows a slice
            _camera_and_next(rows, entry, index, last, memory[buffer.key], buffer, memo)
            continue
        target = flat_view(leaf.numpy(), (len(flat), *buffer.shape[2:]))
        if kind == ZEROS:
            target[...] = 0
        elif kind == NEXT_OF:
            _next_rows(rows, entry, flat, last, target, memo)
        elif kind in (ARRAY, UNSQUEEZE):
            source = rows.file_rows(entry["file"])
            source.read_into(flat, target, memo=memo.setdefault(entry["file"], []))
        else:
            raise ValueError(f"unknown TED key kind {kind!r}")
    return out


def gather_rows(rows: TedRows, index: np.ndarray) -> TensorDict:
    """The TED's rows ``index`` (any rows, repeats allowed) as one TensorDict of batch size
    ``(len(index),)`` in new memory, every leaf contiguous: the values of the TED's TensorDict
    indexed with ``index``, each distinct frame decoded once (a row's next frame is the next
    row's frame, copied: a slice of ``L`` rows decodes ``L + 1`` frames)."""
    index = np.asarray(index, dtype=np.int64).reshape(-1)
    buffers = batch_buffers(rows, index, 1, share=False)
    return gather(rows, index, 1, buffers).reshape(-1)


def _last_steps(rows: TedRows, starts: np.ndarray, length: int) -> np.ndarray:
    """(B, L): whether each step is its episode's last (its next is no step of the TED)."""
    index = np.asarray(starts, dtype=np.int64)[:, None] + np.arange(length, dtype=np.int64)
    return rows.file_rows("next/done.npy")[index.reshape(-1)].astype(bool).reshape(index.shape)


def _camera_and_next(rows, entry, index, last, memory, buffer, memo) -> None:
    """A camera's ``L + 1`` rows a slice: its ``L`` steps, then what the last step's next
    reads (the next step's frame, or zeros at an episode's end: a camera with final
    observations is not shared)."""
    items, length = index.shape
    whole = replace(buffer, shape=(items, buffer.rows, *buffer.shape[2:]), rows=0)
    target = flat_view(view_of(memory, whole).numpy(), (items * buffer.rows, *buffer.shape[2:]))
    ends = last.reshape(items, length)[:, -1]
    wanted = np.concatenate([index, index[:, -1:] + 1], axis=1)  # (B, L + 1)
    places = np.arange(items * buffer.rows).reshape(items, buffer.rows)
    keep = np.ones(wanted.shape, dtype=bool)
    keep[:, -1] = ~ends
    source = rows.file_rows(entry["file"])
    source.read_into(wanted[keep], target, places[keep], memo.setdefault(entry["file"], []))
    target[places[ends, -1]] = 0


def _next_rows(rows, entry, flat, last, target, memo) -> None:
    """``("next", key)``: the row after each step; on a last step the episode's final
    observation (``final/<key>.npy`` by the step's episode id) or zeros."""
    source = rows.file_rows(entry["file"])
    following = np.flatnonzero(~last)
    source.read_into(flat[following] + 1, target, following, memo.setdefault(entry["file"], []))
    ends = np.flatnonzero(last)
    if not len(ends):
        return
    if "final" in entry:
        episodes = rows.file_rows("episode.npy")[flat[ends]].astype(np.int64)
        target[ends] = rows.file_rows(entry["final"])[episodes]
    else:
        target[ends] = 0


def _torch_dtype(dtype: np.dtype) -> torch.dtype:
    return torch.from_numpy(np.zeros(0, dtype)).dtype
