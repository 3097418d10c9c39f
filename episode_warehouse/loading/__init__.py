"""Trainer-side loading: TorchRL replay buffers, catalog selections, torch datasets, streaming.

- :func:`replay_buffer` builds a TorchRL ``ReplayBuffer`` over one or many partitions.
- :func:`select_episodes` turns SQL over the catalog into a :class:`Selection` of episodes.
- :class:`EpisodeSliceDataset` (map-style) and :class:`EpisodeStream` (iterable, sharded over
  DataLoader workers and distributed ranks, weighted, resumable) read slices of the selected
  episodes lazily.
- :class:`StepWindowDataset` gives one item per step with windows of steps around it.
- :func:`selection_stats` gives per-key normalization statistics of a selection.
"""

from episode_warehouse.loading.selection import Selection, select_episodes
from episode_warehouse.loading.statistics import selection_stats
from episode_warehouse.loading.torch_datasets import (
    EpisodeSliceDataset,
    EpisodeStream,
    no_collate,
    ted_collate,
)
from episode_warehouse.loading.windows import StepWindowDataset

__all__ = [
    "EpisodeSliceDataset",
    "EpisodeStream",
    "Selection",
    "StepWindowDataset",
    "no_collate",
    "replay_buffer",
    "select_episodes",
    "selection_stats",
    "ted_collate",
]


def __getattr__(name: str):
    if name == "replay_buffer":  # imports torchrl (dev dependency) only when asked
        from episode_warehouse.loading.replay import replay_buffer

        return replay_buffer
    raise AttributeError(name)
