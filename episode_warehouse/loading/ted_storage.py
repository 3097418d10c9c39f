"""A TorchRL storage over a TED whose sampled batches are read at once.

``TensorStorage(open_ted(...))`` reads a sample by indexing the TED's TensorDict: every leaf
indexed on its own, so a camera stored encoded decodes each sampled row for ``observation`` and
again for ``("next", "observation")``, one frame at a time. And TorchRL's ``SliceSampler``
reads the sampled rows once itself (``storage[index]``, for their ``done`` and ``terminated``)
before the buffer reads them again (``storage.get(index)``): on a TED of frames stored
encoded, four decodes of a frame a sample.

``TedStorage`` reads a sample of rows with the batch read of the rows layer
(:func:`~episode_warehouse.ted.gather.gather_rows`): every key gathered once, each distinct
frame decoded once straight into the batch (a slice of ``L`` steps decodes ``L + 1``), into
memory reused once the trainer has dropped the batch it held
(:mod:`episode_warehouse.batches.reuse`). The batch the sampler reads is kept for the buffer's
read of the same rows that follows it, so the buffer hands that same batch on instead of reading
it twice. The values are those ``TensorStorage`` gives (tests compare both on the same
samples); any index that is not a 1-D tensor of rows (a slice, a mask, a tuple of several),
and a TED that is not on this machine, is read by ``TensorStorage`` itself.
"""

from __future__ import annotations

import threading

import numpy as np
import torch
from tensordict import TensorDictBase
from torchrl.data import TensorStorage

from episode_warehouse.ted.assemble import MappedRows
from episode_warehouse.ted.gather import gather_rows


class TedStorage(TensorStorage):
    """A read-only ``TensorStorage`` of ``ted`` (what :func:`~episode_warehouse.ted.open.
    open_ted` gives) that reads samples through ``rows`` (its memory-mapped rows; None: as
    ``TensorStorage`` reads them)."""

    def __init__(self, ted: TensorDictBase, rows: MappedRows | None) -> None:
        super().__init__(ted)
        self._rows = rows
        self._held: tuple[np.ndarray, TensorDictBase] | None = None  # the sampler's last read
        self._lock = threading.Lock()

    def __getstate__(self) -> dict:
        state = super().__getstate__()
        state.update(_held=None, _lock=None)
        return state

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        self._lock = threading.Lock()

    def get(self, index):
        return self._read(index)[1]

    def __getitem__(self, index):
        """What the sampler reads (``storage[index]``): kept for the buffer's ``get`` of the
        same rows (one batch a storage; a different index reads again)."""
        rows, batch = self._read(index)
        if rows is not None:
            with self._lock:
                self._held = (rows, batch)
        return batch

    def _read(self, index) -> tuple[np.ndarray | None, TensorDictBase]:
        """The rows ``index`` picks (None where ``TensorStorage`` reads it) and their batch:
        the sampler's read of the same rows where it is held, else read now."""
        mapped = self._rows
        rows = _rows_of(index, len(self)) if mapped is not None else None
        if mapped is None or rows is None:
            return None, super().get(index)
        with self._lock:
            held, self._held = self._held, None
        if held is not None and np.array_equal(held[0], rows):
            return rows, held[1]  # the sampler's read of these rows, handed on
        return rows, gather_rows(mapped, rows)


def _rows_of(index, rows: int) -> np.ndarray | None:
    """The TED rows a storage index picks, where it is a 1-D tensor of rows in range (alone or
    as a tuple of one, as ``SliceSampler`` gives it); else None."""
    if isinstance(index, tuple) and len(index) == 1:
        index = index[0]
    if not isinstance(index, torch.Tensor) or index.ndim != 1 or index.dtype not in _INTEGERS:
        return None
    picked = index.cpu().numpy().astype(np.int64, copy=False)
    if len(picked) and (picked.min() < 0 or picked.max() >= rows):
        return None  # TensorStorage's own read says what is wrong
    return picked


_INTEGERS = (torch.int64, torch.int32, torch.int16, torch.int8)  # (uint8 and bool: masks)
