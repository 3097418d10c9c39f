"""Open X-Embodiment as a source: partitions are dataset ids, fps the control frequency."""

from episode_warehouse.sources.openx.datasets import CONTROL_HZ, DEFAULT_HZ, check_dataset_id
from episode_warehouse.sources.source import Source

SOURCE = Source(
    name="openx",
    check_partition=check_dataset_id,
    fps=lambda partition: CONTROL_HZ.get(partition, DEFAULT_HZ),
    describe="Open X-Embodiment datasets (WebDataset tar shards), one dataset id a partition",
    octo_datasets=True,
    named_by_partition=True,
)
