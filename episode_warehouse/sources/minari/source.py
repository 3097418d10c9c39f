"""Minari datasets as a source: partitions are dataset ids (``D4RL/door/human-v2``)."""

from episode_warehouse.sources.minari.dataset_id import check_dataset_id
from episode_warehouse.sources.source import Source

# Minari records no control rate; 20 Hz is MuJoCo locomotion's (dt = 0.05 s) and D4RL's usual
DEFAULT_FPS = 20

SOURCE = Source(
    name="minari",
    check_partition=check_dataset_id,
    fps=lambda partition: DEFAULT_FPS,
    describe="Farama Minari datasets (D4RL and its successors), one dataset id each",
    extra="minari",
    modules=("h5py",),
)
