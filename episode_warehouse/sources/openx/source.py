"""Open X-Embodiment as a source: partitions are dataset ids, or shard ranges of one
(``droid@00000-00031``); fps is the dataset's control frequency where the OXE table knows it
(else None: unknown)."""

from episode_warehouse.partition_keys import dataset_of
from episode_warehouse.sources.openx.datasets import CONTROL_HZ, check_dataset_id
from episode_warehouse.sources.source import Source

SOURCE = Source(
    name="openx",
    check_partition=check_dataset_id,
    fps=lambda partition: CONTROL_HZ.get(dataset_of(partition)),  # None: not known
    describe="Open X-Embodiment datasets (RLDS or WebDataset shards), one dataset id (or shard "
    "range of one) a partition",
    octo_datasets=True,
    named_by_partition=True,
    dataset_of=dataset_of,
)
