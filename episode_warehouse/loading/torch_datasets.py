"""torch datasets over a selection: map-style slices and a sharded, deterministic stream.

Both hold only paths and small index arrays; each process opens the memory-mapped TEDs itself
on first use, so they pickle cheaply into DataLoader workers and read lazily (bounded memory).
"""

from __future__ import annotations

import numpy as np
import torch
from tensordict import TensorDictBase
from torch.utils.data import Dataset, IterableDataset, get_worker_info

from episode_warehouse.loading.selection import Selection
from episode_warehouse.paths import WarehouseLayout


def ted_collate(items: list[TensorDictBase]) -> TensorDictBase:
    """``collate_fn`` for DataLoader: stack equal-length slices into one TensorDict."""
    return torch.stack(items).contiguous()


def no_collate(item: TensorDictBase) -> TensorDictBase:
    """``collate_fn`` for ``DataLoader(stream, batch_size=None)``: hand items over unchanged
    (torch's default would iterate the TensorDict's rows)."""
    return item


class _TedCache:
    """Per-process cache of opened TEDs (not pickled)."""

    def __init__(self, selection: Selection) -> None:
        self.selection = selection
        self._open: dict[tuple[str, str], TensorDictBase] = {}

    def __getstate__(self):
        return {"selection": self.selection, "_open": {}}

    def get(self, source: str, partition: str) -> TensorDictBase:
        key = (source, partition)
        if key not in self._open:
            from episode_warehouse.ted.reader import open_ted_folder

            layout = WarehouseLayout(self.selection.root)
            self._open[key] = open_ted_folder(layout.ted_dir(source, partition))
        return self._open[key]

    def read(self, i: int, offset: int, length: int) -> TensorDictBase:
        """Steps [offset, offset+length) of selected episode ``i``, plus ``selection_index``
        (= i, the row of the selection, to map items back to the catalog)."""
        s = self.selection
        td = self.get(s.source[i], s.partition[i])
        start = int(s.start[i]) + offset
        out = td[start : start + length]
        out["selection_index"] = torch.full((length,), i, dtype=torch.int64)
        return out


def _chunks(length: int, slice_len: int | None, drop_last: bool) -> list[tuple[int, int]]:
    if slice_len is None:
        return [(0, length)]
    out = [(o, slice_len) for o in range(0, length - slice_len + 1, slice_len)]
    rest = length % slice_len
    if rest and not drop_last:
        out.append((length - rest, rest))
    return out


class EpisodeSliceDataset(Dataset):
    """Map-style: item k is the k-th non-overlapping slice of ``slice_len`` steps of the
    selected episodes (episodes shorter than ``slice_len`` contribute none)."""

    def __init__(self, selection: Selection, slice_len: int) -> None:
        self.cache = _TedCache(selection)
        self.slice_len = slice_len
        counts = selection.length // slice_len
        self._episode = np.repeat(np.arange(len(selection)), counts)
        self._offset = (
            np.concatenate([np.arange(c) * slice_len for c in counts])
            if len(counts)
            else np.zeros(0, dtype=np.int64)
        )

    def __len__(self) -> int:
        return len(self._episode)

    def __getitem__(self, k: int) -> TensorDictBase:
        return self.cache.read(int(self._episode[k]), int(self._offset[k]), self.slice_len)


class EpisodeStream(IterableDataset):
    """Iterable over the selected episodes, each delivered exactly once per epoch across all
    DataLoader workers and distributed ranks.

    Episodes are shuffled with ``seed + epoch`` (call :meth:`set_epoch` each epoch), then
    dealt round-robin to ranks, then to workers. Yields whole episodes (``slice_len=None``)
    or consecutive slices of ``slice_len`` steps (the last, shorter one too unless
    ``drop_last``).

    Args:
        selection: the episodes.
        slice_len: steps per item, or None for whole episodes.
        seed: shuffling seed; ``shuffle=False`` keeps catalog order.
        rank, world_size: default to torch.distributed's when it is initialized, else 0 and 1.
    """

    def __init__(
        self,
        selection: Selection,
        slice_len: int | None = None,
        *,
        seed: int = 0,
        shuffle: bool = True,
        drop_last: bool = False,
        rank: int | None = None,
        world_size: int | None = None,
    ) -> None:
        super().__init__()
        self.cache = _TedCache(selection)
        self.slice_len, self.seed, self.shuffle, self.drop_last = (
            slice_len,
            seed,
            shuffle,
            drop_last,
        )
        dist = torch.distributed.is_available() and torch.distributed.is_initialized()
        self.rank = rank if rank is not None else (torch.distributed.get_rank() if dist else 0)
        self.world_size = (
            world_size
            if world_size is not None
            else (torch.distributed.get_world_size() if dist else 1)
        )
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def episode_order(self) -> np.ndarray:
        """The episodes this process (rank, worker) delivers this epoch, in order."""
        n = len(self.cache.selection)
        order = (
            np.random.default_rng(self.seed + self.epoch).permutation(n)
            if self.shuffle
            else np.arange(n)
        )
        mine = order[self.rank :: self.world_size]
        info = get_worker_info()
        if info is not None:
            mine = mine[info.id :: info.num_workers]
        return mine

    def __iter__(self):
        lengths = self.cache.selection.length
        for i in self.episode_order():
            for offset, length in _chunks(int(lengths[i]), self.slice_len, self.drop_last):
                yield self.cache.read(int(i), offset, length)
