"""A TorchRL sampler of fixed-length slices inside chosen episodes, drawn by per-episode weight.

TorchRL's ``SliceSampler`` draws trajectories uniformly; a selection's ``weight`` column asks for
draws in proportion to a weight per episode. :class:`EpisodeWeightSampler` draws episodes with
replacement (``torch.multinomial`` over the weights), then a start uniformly among the positions
where a whole slice fits, and returns the flat storage indices of ``batch_size // slice_len``
slices (the layout ``SliceSampler`` returns, so the buffer's batches look the same).
"""

from __future__ import annotations

import numpy as np
import torch
from torchrl.data.replay_buffers.samplers import Sampler

from episode_warehouse.errors import ConfigError


class EpisodeWeightSampler(Sampler):
    """Slices of ``slice_len`` steps of the episodes (``starts``, ``lengths``, storage rows),
    episode i drawn with probability ``weights[i] / sum(weights)`` among those that fit a slice.

    Raises:
        ConfigError: no episode with a positive weight is at least ``slice_len`` steps long.
    """

    def __init__(self, starts, lengths, weights, slice_len: int, seed: int | None = None) -> None:
        lengths = np.asarray(lengths, dtype=np.int64)
        weights = np.where(lengths >= slice_len, np.asarray(weights, dtype=np.float64), 0.0)
        if not weights.sum() > 0:
            raise ConfigError(
                f"no episode with a positive weight has {slice_len} steps",
                subject="replay_buffer",
                fix="lower slice_len or select longer episodes",
            )
        self.slice_len = slice_len
        self.starts = torch.as_tensor(np.asarray(starts, dtype=np.int64))
        self.room = torch.as_tensor(lengths - slice_len + 1).clamp(min=1)
        self.weights = torch.as_tensor(weights / weights.sum())
        self.generator = torch.Generator()
        if seed is not None:
            self.generator.manual_seed(seed)

    def sample(self, storage, batch_size: int):
        if batch_size % self.slice_len:
            raise ConfigError(
                f"batch_size {batch_size} is not a multiple of slice_len {self.slice_len}",
                subject="replay_buffer",
                fix="ask for whole slices",
            )
        n = batch_size // self.slice_len
        episode = torch.multinomial(self.weights, n, replacement=True, generator=self.generator)
        offset = torch.rand(n, generator=self.generator, dtype=torch.float64) * self.room[episode]
        first = self.starts[episode] + offset.long()
        index = (first[:, None] + torch.arange(self.slice_len)).reshape(-1)
        return index, {}

    # the sampler holds no state that the storage's contents change
    def _empty(self) -> None:
        pass

    def dumps(self, path) -> None:
        pass

    def loads(self, path) -> None:
        pass

    def state_dict(self) -> dict:
        return {"generator": self.generator.get_state()}

    def load_state_dict(self, state_dict: dict) -> None:
        self.generator.set_state(state_dict["generator"])
