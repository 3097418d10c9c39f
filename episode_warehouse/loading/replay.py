"""TorchRL replay buffers over TED partitions, sampling slices inside episodes."""

from __future__ import annotations

import os

import numpy as np

from episode_warehouse.errors import ConfigError
from episode_warehouse.ted.open import open_ted_and_rows


def replay_buffer(
    partitions,
    *,
    slice_len: int = 64,
    batch_size: int = 256 * 64,
    root: str | os.PathLike | None = None,
    seed: int | None = None,
):
    """A TorchRL replay buffer sampling ``batch_size // slice_len`` slices of ``slice_len`` steps
    that never cross an episode boundary (trajectories from the ``episode`` key).

    ``partitions`` is a list of (source, partition): one gives a
    ``ReplayBuffer(TedStorage(ted), SliceSampler)`` (a ``TensorStorage`` that reads each
    sample at once, :mod:`~episode_warehouse.loading.ted_storage`); several give a
    :class:`PartitionMixture` of those, sampled in proportion to their number of steps (no
    partition is copied or concatenated). Or it is a :class:`Selection`: slices come from its
    episodes only, each episode drawn in proportion to the selection's ``weight`` column
    (uniformly without one), among the episodes of at least ``slice_len`` steps.

    Example:
        >>> rb = replay_buffer([("atari", "Pong/5"), ("atari", "Pong/1")], slice_len=64)
        >>> batch = rb.sample()   # 256 slices x 64 steps
        >>> rb = replay_buffer(select_episodes("SELECT ..., weight FROM episodes"), slice_len=64)
    """
    from torchrl.data import ReplayBuffer, SliceSampler

    from episode_warehouse.loading.selection import Selection
    from episode_warehouse.loading.ted_storage import TedStorage

    if batch_size % slice_len:
        raise ValueError(f"batch_size {batch_size} must be a multiple of slice_len {slice_len}")
    if isinstance(partitions, Selection):
        return _selection_buffer(partitions, slice_len, batch_size, seed)
    buffers, tds = [], []
    for source, partition in partitions:
        td, mapped = open_ted_and_rows(source, partition, root)
        tds.append(td)
        episodes = td["episode"].numpy().reshape(-1)
        longest = int(np.bincount(episodes - episodes.min()).max()) if len(episodes) else 0
        if longest < slice_len:  # torchrl would fail at the first sample, in its own words
            raise ConfigError(
                f"slice_len {slice_len} is longer than every episode of {source} {partition} "
                f"(the longest has {longest} steps)",
                subject=f"{source} {partition}",
                fix=f"lower slice_len to at most {longest}, or select longer episodes",
            )
        sampler = SliceSampler(slice_len=slice_len, traj_key="episode", strict_length=True)
        # a mixture passes its own batch sizes to sample(); a single buffer keeps its own
        buffers.append(
            ReplayBuffer(
                storage=TedStorage(td, mapped),
                sampler=sampler,
                batch_size=batch_size if len(partitions) == 1 else None,
            )
        )
    if len(buffers) == 1:
        return buffers[0]
    _one_schema([f"{s}:{p}" for s, p in partitions], tds)
    return PartitionMixture(buffers, slice_len, batch_size, seed=seed)


def _one_schema(labels: list[str], tds: list) -> None:
    """A mixture concatenates slices of every partition: they need one schema."""
    from episode_warehouse.batches.schema import require_one_schema

    require_one_schema(list(zip(labels, tds, strict=True)), "replay_buffer")


def _selection_buffer(selection, slice_len: int, batch_size: int, seed: int | None):
    """Per partition a buffer whose sampler draws its selected episodes by weight; several are
    mixed by their total weight, so an episode's share is its weight over all of them."""
    import numpy as np
    from torchrl.data import ReplayBuffer

    from episode_warehouse.loading.episode_sampler import EpisodeWeightSampler
    from episode_warehouse.loading.ted_storage import TedStorage
    from episode_warehouse.ted.reader import TedReader

    root = selection.reader_root()
    weight = selection.weight if selection.weight is not None else np.ones(len(selection))
    fits = np.where(selection.length >= slice_len, weight, 0.0)
    pairs = list(zip(selection.source, selection.partition, strict=True))
    buffers, totals, labels, tds = [], [], [], []
    for n, (source, partition) in enumerate(selection.partitions):
        rows = np.array([i for i, pair in enumerate(pairs) if pair == (source, partition)])
        if not fits[rows].sum() > 0:
            continue  # no episode of this partition can give a slice
        reader = TedReader.of(root, source, partition)
        starts = selection.starts_in(source, partition, reader.record, reader.episodes)
        sampler = EpisodeWeightSampler(
            starts,
            selection.length[rows],
            weight[rows],
            slice_len,
            seed=None if seed is None else seed + 1 + n,
        )
        td, mapped = reader.whole(), reader.mapped_rows()
        tds.append(td)
        single = len(selection.partitions) == 1
        buffers.append(
            ReplayBuffer(
                storage=TedStorage(td, mapped),
                sampler=sampler,
                batch_size=batch_size if single else None,
            )
        )
        totals.append(float(fits[rows].sum()))
        labels.append(f"{source}:{partition}")
    if not buffers:
        from episode_warehouse.errors import ConfigError

        raise ConfigError(
            f"no selected episode with a positive weight has {slice_len} steps",
            subject="replay_buffer",
            fix="lower slice_len or select longer episodes",
        )
    if len(buffers) == 1:
        return buffers[0]
    _one_schema(labels, tds)
    return PartitionMixture(buffers, slice_len, batch_size, seed=seed, weights=totals)


class PartitionMixture:
    """Samples each batch's slices across partitions in proportion to their steps (or to
    ``weights``).

    ``sample()`` draws how many of the ``batch_size // slice_len`` slices come from each
    partition (multinomial), samples them from that partition's buffer and concatenates them.
    """

    def __init__(
        self,
        buffers: list,
        slice_len: int,
        batch_size: int,
        seed: int | None = None,
        weights: list[float] | None = None,
    ) -> None:
        import torch

        self.buffers, self.slice_len, self.batch_size = buffers, slice_len, batch_size
        sizes = torch.tensor(
            weights if weights is not None else [len(b) for b in buffers], dtype=torch.float64
        )
        self.weights = sizes / sizes.sum()
        self.generator = torch.Generator()
        if seed is not None:
            self.generator.manual_seed(seed)

    def __len__(self) -> int:
        return sum(len(b) for b in self.buffers)

    def sample(self):
        import torch

        slices = self.batch_size // self.slice_len
        picks = torch.multinomial(self.weights, slices, replacement=True, generator=self.generator)
        counts = torch.bincount(picks, minlength=len(self.buffers)).tolist()
        parts = [
            b.sample(n * self.slice_len) for b, n in zip(self.buffers, counts, strict=True) if n
        ]
        return torch.cat(parts)
