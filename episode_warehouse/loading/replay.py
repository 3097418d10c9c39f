"""TorchRL replay buffers over TED partitions, sampling slices inside episodes."""

from __future__ import annotations

import os

from episode_warehouse.ted.reader import open_ted


def replay_buffer(
    partitions: list[tuple[str, str]],
    *,
    slice_len: int = 64,
    batch_size: int = 256 * 64,
    root: str | os.PathLike | None = None,
):
    """A TorchRL replay buffer sampling ``batch_size // slice_len`` slices of ``slice_len`` steps
    that never cross an episode boundary (trajectories from the ``episode`` key).

    One partition gives a ``ReplayBuffer(TensorStorage(ted), SliceSampler)``; several give a
    :class:`PartitionMixture` of those, sampled in proportion to their number of steps (no
    partition is copied or concatenated).

    Example:
        >>> rb = replay_buffer([("atari", "Pong/5"), ("atari", "Pong/1")], slice_len=64)
        >>> batch = rb.sample()   # 256 slices x 64 steps
    """
    from torchrl.data import ReplayBuffer, SliceSampler, TensorStorage

    if batch_size % slice_len:
        raise ValueError(f"batch_size {batch_size} must be a multiple of slice_len {slice_len}")
    buffers = []
    for source, partition in partitions:
        td = open_ted(source, partition, root)
        sampler = SliceSampler(slice_len=slice_len, traj_key="episode", strict_length=True)
        # a mixture passes its own batch sizes to sample(); a single buffer keeps its own
        buffers.append(
            ReplayBuffer(
                storage=TensorStorage(td),
                sampler=sampler,
                batch_size=batch_size if len(partitions) == 1 else None,
            )
        )
    if len(buffers) == 1:
        return buffers[0]
    return PartitionMixture(buffers, slice_len, batch_size)


class PartitionMixture:
    """Samples each batch's slices across partitions in proportion to their steps.

    ``sample()`` draws how many of the ``batch_size // slice_len`` slices come from each
    partition (multinomial), samples them from that partition's buffer and concatenates them.
    """

    def __init__(
        self, buffers: list, slice_len: int, batch_size: int, seed: int | None = None
    ) -> None:
        import torch

        self.buffers, self.slice_len, self.batch_size = buffers, slice_len, batch_size
        sizes = torch.tensor([len(b) for b in buffers], dtype=torch.float64)
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
