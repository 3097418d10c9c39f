"""Step windows: every step of a selection with its history and future, as policies train.

``StepWindowDataset(selection, {"observation": [-3, -2, -1, 0], "action": list(range(16))})``:
item i is step i of the selection (episodes in selection order, every step); ``item[key]``
stacks the values at ``t + d`` for each offset d, clamped to the episode's first and last step
(windows never cross an episode boundary), and ``item[key + "_is_pad"]`` flags the clamped
offsets, as LeRobot's ``delta_timestamps`` does. For a nested key the flag sits beside the leaf
(``("observation", "state_is_pad")``).

Batches are gathered with one vectorized index per key and partition (``__getitems__``, which
torch's DataLoader calls with a whole batch of indices): pass ``collate_fn=no_collate``.
"""

from __future__ import annotations

import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase
from torch.utils.data import Dataset, get_worker_info

from episode_warehouse.batches.buffers import Buffer, view_of
from episode_warehouse.errors import ConfigError
from episode_warehouse.frames.rows import flat_view
from episode_warehouse.frames.tensor import rows_of
from episode_warehouse.loading.selection import Selection
from episode_warehouse.loading.ted_cache import TedCache

Key = str | tuple[str, ...]


def _key(key: Key) -> tuple[str, ...]:
    return (key,) if isinstance(key, str) else tuple(key)


def _name(key: tuple[str, ...]) -> Key:
    return key if len(key) > 1 else key[0]


def pad_key(key: Key) -> tuple[str, ...]:
    """The pad flag's key beside ``key``'s leaf: ``observation_is_pad``,
    ``("observation", "state_is_pad")``."""
    parts = _key(key)
    return (*parts[:-1], parts[-1] + "_is_pad")


class StepWindowDataset(Dataset):
    """Map-style dataset of every selected step with windows of other steps around it.

    Args:
        selection: the episodes (their order is the item order).
        deltas: TED key -> step offsets, e.g. ``{"observation": [-1, 0], "action": [0, 1]}``.

    Raises:
        ConfigError: a key the TEDs do not have, an empty or non-integer offset list.
    """

    def __init__(self, selection: Selection, deltas: dict[Key, list[int]]) -> None:
        if not deltas:
            raise ConfigError("no keys in deltas", subject="StepWindowDataset", fix="name a key")
        self.cache = TedCache(selection)
        self.deltas = {}
        for key, offsets in deltas.items():
            if not offsets or not all(isinstance(d, int | np.integer) for d in offsets):
                raise ConfigError(
                    f"offsets of {key!r} must be a non-empty list of integers, not {offsets!r}",
                    subject="StepWindowDataset",
                )
            self.deltas[_key(key)] = np.asarray(list(offsets), dtype=np.int64)
        for source, partition in selection.partitions:
            td = self.cache.get(source, partition)
            known = set(td.keys(True, True))
            for key in self.deltas:
                if _name(key) not in known:
                    raise ConfigError(
                        f"the TED of {source}:{partition} has no key {_name(key)!r}",
                        subject="StepWindowDataset deltas",
                        fix="use one of " + ", ".join(sorted(map(str, known))),
                    )
        # the index arithmetic is numpy's: a batch's ~30 small operations cost 1-2 us each
        # there, 4-10 us each as torch operations
        self._lengths = np.asarray(selection.length, dtype=np.int64)
        self._ends = np.cumsum(self._lengths)
        pairs = list(zip(selection.source, selection.partition, strict=True))
        self._parts = sorted(set(pairs))
        self._part_of = np.asarray([self._parts.index(p) for p in pairs], dtype=np.int64)
        # a batch's buffers by (items, partitions present), with the leaves they were made
        # for (a partition reopened at another version is planned again)
        self._layouts: dict[tuple[int, tuple[int, ...]], tuple[list, list[Buffer] | None]] = {}

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_layouts": {}}  # (they hold this process's opened TEDs)

    def __len__(self) -> int:
        return int(self._ends[-1]) if len(self._ends) else 0

    def __getitem__(self, index: int) -> TensorDictBase:
        return self.__getitems__([index])[0]

    def __getitems__(self, indices) -> TensorDictBase:
        """A batch of items as one TensorDict of batch size ``len(indices)``."""
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        if len(idx) and (idx.min() < 0 or idx.max() >= len(self)):
            raise IndexError(f"step index out of range 0..{len(self) - 1}")
        row = np.searchsorted(self._ends, idx, side="right")
        step = idx - (self._ends[row] - self._lengths[row])
        last = (self._lengths[row] - 1)[:, None]
        first = self.cache.start[row][:, None]  # (re-resolved where a partition was rebuilt)
        windows = {}
        for key, offsets in self.deltas.items():
            at = step[:, None] + offsets[None, :]
            pad = (at < 0) | (at > last)
            windows[key] = (first + np.minimum(np.maximum(at, 0), last), pad)
        if get_worker_info() is not None and len(idx):  # straight into a shared slot
            batch = self._into_slot(row, step, windows)
            if batch is not None:
                return batch
        out = TensorDict({"selection_index": torch.from_numpy(row), "step": torch.from_numpy(step)},
                         batch_size=[len(idx)])  # fmt: skip
        for key, (rows, pad) in windows.items():
            out.set(key, self._gather(key, row, rows))
            out.set(pad_key(key), torch.from_numpy(pad))
        return out

    def _into_slot(self, row, step, windows) -> TensorDictBase | None:
        """The batch written into a shared-memory slot of this DataLoader worker: each
        partition's items gathered into their places, a camera's frames decoded straight into
        them (each distinct frame once); None when no slot is free, or when the partitions'
        leaves differ in shape or dtype (the items are then gathered one partition at a time)."""
        from episode_warehouse.batches.slots import fill_slot

        part = self._part_of[row]
        present = np.unique(part).tolist()
        tds = {p: self.cache.get(*self._parts[p]) for p in present}
        n = len(row)
        buffers = self._layout(n, tds)
        if buffers is None:
            return None
        # each partition's items: their places in the batch
        mine = {p: np.flatnonzero(part == p) for p in present}

        def fill(memory) -> TensorDict:
            leaves = {b.key: view_of(memory[b.key], b) for b in buffers}
            leaves[("selection_index",)].numpy()[:] = row
            leaves[("step",)].numpy()[:] = step
            for key, (rows, pad) in windows.items():
                target, width = leaves[key], rows.shape[1]
                for p, items in mine.items():
                    stored, wanted = rows_of(tds[p].get(_name(key))), rows[items].reshape(-1)
                    view = flat_view(target.numpy(), (n * width, *target.shape[2:]))
                    places = (items[:, None] * width + np.arange(width)).reshape(-1)
                    stored.read_into(wanted, view, None if len(mine) == 1 else places)
                leaves[pad_key(key)].numpy()[:] = pad
            out = TensorDict(batch_size=[n])
            for key, value in leaves.items():
                out.set(key, value)
            return out

        return fill_slot(buffers, fill)

    def _layout(self, n: int, tds: dict[int, TensorDictBase]) -> list[Buffer] | None:
        """The buffers of a batch of ``n`` items of the partitions ``tds`` (None when their
        leaves differ in shape or dtype), planned once for the TEDs they were planned for."""
        planned, opened = (n, tuple(tds)), list(tds.values())
        kept = self._layouts.get(planned)
        if kept is not None and all(a is b for a, b in zip(kept[0], opened, strict=True)):
            return kept[1]
        buffers: list[Buffer] | None = [Buffer(("selection_index",), (n,), torch.int64),
                                        Buffer(("step",), (n,), torch.int64)]  # fmt: skip
        for key, offsets in self.deltas.items():
            leaves = [td.get(_name(key)) for td in opened]
            kinds = {(tuple(x.shape[1:]), x.dtype, rows_of(x).pixels_last) for x in leaves}
            if len(kinds) > 1:
                buffers = None
                break
            leaf = leaves[0]
            shape = (n, len(offsets), *leaf.shape[1:])
            camera = rows_of(leaf).pixels_last
            buffers.append(Buffer(key, shape, leaf.dtype, camera))  # type: ignore[union-attr]
            buffers.append(Buffer(pad_key(key), (n, len(offsets)), torch.bool))  # type: ignore[union-attr]
        if len(self._layouts) >= 256:  # partitions met in many combinations: start again
            self._layouts.clear()
        self._layouts[planned] = (opened, buffers)
        return buffers

    def _gather(self, key: tuple[str, ...], row: np.ndarray, rows: np.ndarray):
        """``td[key][rows]`` for each item's partition; one advanced index per partition."""
        part = self._part_of[row]
        result = None
        present = np.unique(part).tolist()
        if len(present) == 1:  # the common case: no second copy into a result tensor
            td = self.cache.get(*self._parts[present[0]])
            values = td.get(_name(key))[torch.from_numpy(rows.reshape(-1))]
            return values.reshape(*rows.shape, *values.shape[1:])
        for p in present:
            mine = np.flatnonzero(part == p)
            td = self.cache.get(*self._parts[p])
            values = td.get(_name(key))[torch.from_numpy(rows[mine].reshape(-1))]
            values = values.reshape(len(mine), rows.shape[1], *values.shape[1:])
            if result is None:
                result = torch.empty((len(row), *values.shape[1:]), dtype=values.dtype)
            result[torch.from_numpy(mine)] = values
        return result
