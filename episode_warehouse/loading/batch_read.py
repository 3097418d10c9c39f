"""The one batch read of the loaders: rows asked for as references, read as a whole batch.

Every dataset over a selection says which rows it wants as :class:`SliceRef` items (a selection
row, an offset, a length: nothing read) and reads a batch of them with :func:`read_slices`:
``EpisodeStream``'s items are references that :func:`~episode_warehouse.loading.torch_datasets.
ted_collate` reads in the DataLoader worker that collates (as TorchRL's ``DecodeVideoTransform``
decodes on the sample path), ``EpisodeSliceDataset.__getitems__`` reads its batch of indices
the same way. Where the slices are of one partition and of one length, every key's rows are
gathered at once and every camera's frames decoded straight into the worker's shared-memory
slot (:func:`~episode_warehouse.ted.gather.gather`), each distinct frame once
(:func:`read_batch`): from the memory-mapped files of a folder, or from a bucket root's
episodes as fetched (by the stream's read-ahead, which a slice carries in
:attr:`SliceRef.data`, else now), joined one after another
(:class:`~episode_warehouse.ted.fetched.FetchedRows`). Any other batch (slices of several
partitions or lengths; a folder's TED with nothing to decode, whose slices of the memory map
stack as fast) is read slice by slice and stacked (:func:`stack_slices`): the same values.
There is no decode option to choose.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase

from episode_warehouse.batches.buffers import Buffer, view_of
from episode_warehouse.batches.refs import RowsRef, stack_slices
from episode_warehouse.batches.slots import fill_batch
from episode_warehouse.loading.selection import Selection
from episode_warehouse.ted.assemble import MappedRows
from episode_warehouse.ted.fetched import FetchedRows
from episode_warehouse.ted.gather import batch_buffers, gather
from episode_warehouse.ted.reader import TedReader


class Episodes(Protocol):
    """What a reference reads through (a dataset's per-process cache of opened TEDs)."""

    selection: Selection
    start: np.ndarray  # each selected row's first step in the TED read (the pinned version)

    def read(self, i: int, offset: int, length: int) -> TensorDictBase: ...

    def fetched(self, i: int) -> FetchedRows: ...

    def labelled(self, out: TensorDictBase, i: int, offset: int) -> TensorDictBase: ...

    def reader(self, source: str, partition: str) -> TedReader: ...


EXTRA = (("selection_index",), ("step",))  # int64 leaves every read adds


@dataclass(frozen=True)
class SliceRef(RowsRef):
    """Steps ``[offset, offset + length)`` of the selection's episode ``row``, not yet read
    (``data``: a bucket root's episode as the stream fetched it ahead, kept for the batch);
    :meth:`read` reads it alone (a batch: :func:`read_slices`)."""

    cache: Episodes
    row: int
    offset: int
    length: int
    data: FetchedRows | None = None

    def read(self) -> TensorDictBase:
        if self.data is not None:
            part = self.data.assembled()[self.offset : self.offset + self.length]
            return self.cache.labelled(part, self.row, self.offset)
        return self.cache.read(self.row, self.offset, self.length)

    @classmethod
    def read_batch(cls, refs: list) -> TensorDictBase:
        return read_slices(refs)


def read_slices(refs: list[SliceRef]) -> TensorDictBase:
    """The batch of ``refs`` (batch size ``(len(refs), length)``): read at once where it can be
    (:func:`read_batch`), else slice by slice and stacked; the same values either way."""
    batch = read_batch(refs)
    return batch if batch is not None else stack_slices([r.read() for r in refs])


def read_batch(refs: list[SliceRef]) -> TensorDictBase | None:
    """The batch of ``refs`` (batch size ``(len(refs), length)``), as ``ted_collate`` of the
    slices read one by one gives it; None where it is not read at once (see the module)."""
    cache, s = refs[0].cache, refs[0].cache.selection
    parts = {(s.source[r.row], s.partition[r.row]) for r in refs}
    lengths = {r.length for r in refs}
    if len(parts) != 1 or len(lengths) != 1 or any(r.cache is not cache for r in refs):
        return None
    (length,) = lengths
    selected = np.array([r.row for r in refs], dtype=np.int64)
    offsets = np.array([r.offset for r in refs], dtype=np.int64)
    rows: MappedRows | FetchedRows | None = cache.reader(*parts.pop()).mapped_rows()
    if rows is not None:
        if not any("frames" in entry for entry in rows.ted.keys.values()):
            return None  # nothing to decode: slices of the memory map, stacked, are as fast
        starts = cache.start[selected] + offsets
    else:  # a bucket root's: the slices' episodes as fetched, one after another
        rows, firsts = _joined([r.data if r.data is not None else cache.fetched(r.row)
                                for r in refs])  # fmt: skip
        starts = firsts + offsets

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


def _joined(episodes: list[FetchedRows]) -> tuple[FetchedRows, np.ndarray]:
    """The distinct ``episodes`` joined (:meth:`FetchedRows.join`), and the row where each
    item's episode starts in the join."""
    first: dict[int, int] = {}
    distinct: list[FetchedRows] = []
    at = 0
    for episode in episodes:
        if id(episode) not in first:
            first[id(episode)] = at
            distinct.append(episode)
            at += episode.length
    return FetchedRows.join(distinct), np.array([first[id(e)] for e in episodes], np.int64)
