"""Cross-embodiment training data: OXE datasets standardized as Octo and OpenVLA train on them,
statistics computed once, mixtures by weight, batches in TorchRL's VLA schema.

- :func:`open_standardized` — one standardized partition as a TensorDict;
- :func:`dataset_statistics` — its statistics in Octo's JSON layout (with OpenVLA's q01/q99);
- :func:`mixture_weights` — a named mix, a list or a SQL selection as sampling weights;
- :class:`VLADataset` — an iterable over a mixture whose items collate into VLA batches.

See docs/standardized.md.
"""

from episode_warehouse.standardized.mixtures import NAMED_MIXES, mixture_weights
from episode_warehouse.standardized.reader import dataset_statistics, open_standardized
from episode_warehouse.standardized.statistics import combine_dataset_statistics

__all__ = [
    "NAMED_MIXES",
    "VLADataset",
    "combine_dataset_statistics",
    "dataset_statistics",
    "mixture_weights",
    "open_standardized",
]


def __getattr__(name: str):
    if name == "VLADataset":  # torchrl (the train extra) is imported only when asked
        from episode_warehouse.standardized.vla import VLADataset

        return VLADataset
    raise AttributeError(name)
