"""Decoding as one step of its own: a stream's items as references, read as a whole batch.

``EpisodeStream(selection, 8, decode="batch")`` yields :class:`SliceRef` items (a selection
row, an offset, a length: nothing read); :func:`~episode_warehouse.loading.torch_datasets.
ted_collate` reads a batch of them with :func:`read_batch`, in the DataLoader worker that
collates (as TorchRL's ``DecodeVideoTransform`` decodes on the sample path): every key's rows
gathered at once and every camera's frames decoded straight into the worker's shared-memory
slot (:func:`~episode_warehouse.ted.gather.gather`), each distinct frame once. The default,
``decode="item"``, yields each slice decoded, as before; both give the same batch values.

A batch is read so when its slices are of one partition whose files are on this machine, with
a camera stored encoded, and of one length; any other batch (a bucket root's, which reads
episodes ahead by ranges; slices of several partitions or lengths; a TED with nothing to decode,
whose slices of the memory map stack as fast) is read slice by slice and stacked, the same
values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase

from episode_warehouse.loading.selection import Selection
from episode_warehouse.loading.shared_batches import fill_batch
from episode_warehouse.ted.gather import Buffer, batch_buffers, gather, view_of
from episode_warehouse.ted.reader import TedReader


class Episodes(Protocol):
    """What a reference reads through (a dataset's per-process cache of opened TEDs)."""

    selection: Selection
    start: np.ndarray  # each selected row's first step in the TED read (the pinned version)

    def read(self, i: int, offset: int, length: int) -> TensorDictBase: ...

    def reader(self, source: str, partition: str) -> TedReader: ...


EXTRA = (("selection_index",), ("step",))  # int64 leaves every read adds


@dataclass(frozen=True)
class SliceRef:
    """Steps ``[offset, offset + length)`` of the selection's episode ``row``, not yet read;
    :meth:`read` reads it alone (what ``decode="item"`` yields)."""

    cache: Episodes
    row: int
    offset: int
    length: int

    def read(self) -> TensorDictBase:
        return self.cache.read(self.row, self.offset, self.length)


def read_batch(refs: list[SliceRef]) -> TensorDictBase | None:
    """The batch of ``refs`` (batch size ``(len(refs), length)``), as ``ted_collate`` of the
    slices read one by one gives it; None where it is not read at once (see the module)."""
    cache, s = refs[0].cache, refs[0].cache.selection
    parts = {(s.source[r.row], s.partition[r.row]) for r in refs}
    lengths = {r.length for r in refs}
    rows = cache.reader(*next(iter(parts))).mapped_rows() if len(parts) == 1 else None
    if rows is None or len(lengths) != 1 or any(r.cache is not cache for r in refs):
        return None
    if not any("frames" in entry for entry in rows.ted.keys.values()):
        return None  # nothing to decode: slices of the memory map, stacked, are as fast
    (length,) = lengths
    selected = np.array([r.row for r in refs], dtype=np.int64)
    starts = cache.start[selected] + [r.offset for r in refs]
    offsets = np.array([r.offset for r in refs], dtype=np.int64)

    buffers = batch_buffers(rows, starts, length)
    buffers += [Buffer(key, (len(refs), length), torch.int64) for key in EXTRA]

    def fill(memory: dict) -> TensorDict:
        td = gather(rows, starts, length, buffers[: -len(EXTRA)], memory)
        extra = [np.repeat(selected[:, None], length, axis=1), offsets[:, None] + np.arange(length)]
        for buffer, values in zip(buffers[-len(EXTRA) :], extra, strict=True):
            leaf = view_of(memory[buffer.key], buffer)
            leaf.copy_(torch.from_numpy(values))
            td.set(buffer.key, leaf)
        return td

    return fill_batch(buffers, fill)
