"""References to rows and the one way a batch of them becomes a TensorDict: :class:`RowsRef`
(what a dataset yields: which rows, nothing read; its class reads a batch of them at once) and
:func:`stack_slices` (slices already read, stacked into the worker's slot)."""

from __future__ import annotations

import torch
from tensordict import TensorDictBase
from torch.utils.data import get_worker_info


class RowsRef:
    """A reference to rows a dataset reads (which rows, nothing read): :meth:`read` reads one,
    :meth:`read_batch` (its class's) a whole batch of them at once; ``ted_collate`` calls the
    latter. ``SliceRef`` is the loaders', ``VLARef`` (``standardized/vla.py``) the VLA mix's."""

    def read(self) -> TensorDictBase:
        raise NotImplementedError

    @classmethod
    def read_batch(cls, refs: list) -> TensorDictBase:
        raise NotImplementedError


def stack_slices(slices: list[TensorDictBase]) -> TensorDictBase:
    """Equal-length slices stacked into one TensorDict (in a DataLoader worker, into one of
    its reused shared-memory slots: :mod:`~episode_warehouse.batches.slots`).

    Raises:
        ConfigError: the slices come from TEDs of different schemas (another source), naming
            the keys that differ.
    """
    if get_worker_info() is not None:
        from episode_warehouse.batches.slots import stack_into_slot

        batch = stack_into_slot(slices)
        if batch is not None:
            return batch
    try:
        return torch.stack(slices).contiguous()
    except (RuntimeError, KeyError, ValueError, TypeError):
        from episode_warehouse.batches.schema import require_one_schema

        labels = [f"item {k} (selection row {_row(td)})" for k, td in enumerate(slices)]
        require_one_schema(list(zip(labels, slices, strict=True)), "ted_collate")
        raise  # same schema: another reason, e.g. slices of different lengths


def _row(td: TensorDictBase) -> str:
    rows = td.get("selection_index", None)
    return str(int(rows.reshape(-1)[0])) if rows is not None and rows.numel() else "?"
