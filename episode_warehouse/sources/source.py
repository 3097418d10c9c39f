"""What the generic stages (TED, catalog, statistics, LeRobot export) need to know of a source.

Everything else a source has, its listing, mirror and decoder, lives in its own folder and is
called only by its own raw and decoded stages; from the decoded episodes on, every source is
handled by the same code, driven by what the TED holds (key paths, dtypes, shapes).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Source:
    """One source of episodes.

    Attributes:
        name: the source's name, its folder under ``raw/``, ``decoded/`` and ``ted/``, and the
            ``source`` column of the catalog (lowercase letters, digits, ``_``).
        check_partition: validates a partition key, returns it; raises ``PartitionKeyError``
            (naming the key and the shape it must have) for one that cannot be a key.
        fps: frames per second of a partition, used where its TED recorded none; None where
            the source does not know it (never a guess).
        partition_task: the task string every episode of a partition has (Atari: the game),
            or ``None`` when tasks are per episode (the TED's ``tasks`` and ``task_index``).
        describe: one line for ``warehouse --help`` and the docs.
        extra: the package extra its readers need (``pip install 'episode-warehouse[NAME]'``),
            and ``modules``: the top-level modules of that extra, so a missing one is reported
            as the extra to install.
        octo_datasets: its partitions are the OXE datasets Octo configures (standardized by
            Octo's transforms); else a partition is standardized by a declared mapping.
        named_by_partition: its partitions' data carry the bare partition key as their
            dataset name (OXE's ``bridge``); else ``<source>:<partition>``.
        dataset_of: the dataset a partition is part of (OpenX: ``droid`` for the shard range
            ``droid@00000-00031``); the partition itself where partitions are datasets.
        rewards_are_scores: its rewards measure a score, never success (Atari: the clipped
            change of the game's score): a reward of 1 is never read as success.
    """

    name: str
    check_partition: Callable[[str], object]
    fps: Callable[[str], float | None]
    partition_task: Callable[[str], str] | None = None
    describe: str = ""
    extra: str | None = None
    modules: tuple[str, ...] = ()
    octo_datasets: bool = False
    named_by_partition: bool = False
    dataset_of: Callable[[str], str] = lambda partition: partition
    rewards_are_scores: bool = False

    def dataset_name(self, partition: str) -> str:
        """The name a partition's standardized data, statistics and batches carry (the
        ranges of one dataset carry the dataset's)."""
        dataset = self.dataset_of(partition)
        return dataset if self.named_by_partition else f"{self.name}:{dataset}"
