"""The parts of one dataset across the stages: which partitions a root holds, and the rule that
the parts of one dataset never overlap.

A dataset is published whole (``droid``) or as shard ranges (``droid@00000-00031`` ...), never
both, and its ranges never share a shard: anything else counts the shared episodes twice in the
catalog, a mixture's statistics and ``open_ted`` of the dataset. :func:`check_fits` is called by
the first stage of a build (the OpenX raw stage, and again by its decoded stage), so a build
that would break the rule is refused before it writes anything, naming the partitions in the way
and the commands that clear them (``warehouse drop``, ``warehouse recut``).
"""

from __future__ import annotations

from urllib.parse import unquote

from episode_warehouse.errors import PartitionConflictError, PartitionKeyError
from episode_warehouse.partition_keys import ShardRange, dataset_of, parse_range
from episode_warehouse.storage import Root

# the artifacts of one partition, by stage, in the order a drop removes them after the catalog's
STAGES = ("standardized", "ted", "decoded", "raw")
_LISTED = ("catalog/rows", *STAGES)


def held_partitions(root: Root, source: str) -> set[str]:
    """Every partition key of ``source`` with an artifact published at any stage (a partition
    whose raw stage alone is published holds its shards as much as a finished one)."""
    keys: set[str] = set()
    for prefix in _LISTED:
        for rel in root.published(f"{prefix}/{source}", 1):
            keys.add(unquote(rel.rsplit("/", 1)[-1]))  # the catalog's folders are quoted
    return keys


def dataset_partitions(root: Root, source: str, dataset: str) -> list[str]:
    """The published partitions of ``dataset`` (whole, or its ranges), in key order."""
    return sorted(k for k in held_partitions(root, source) if dataset_of(k) == dataset)


def _overlap(a: ShardRange | None, b: ShardRange | None) -> bool:
    """Whether two parts of a dataset share shards (None: the whole dataset)."""
    return a is None or b is None or (a.first <= b.last and b.first <= a.last)


def check_fits(root: Root, source: str, key: str) -> None:
    """Refuse to build ``key`` where another published partition of its dataset covers any of
    its shards.

    Raises:
        PartitionConflictError: naming the partitions in the way and how to clear them.
    """
    mine = parse_range(key)
    dataset = dataset_of(key)
    clashes = []
    for other in dataset_partitions(root, source, dataset):
        if other == key:
            continue
        try:
            theirs = parse_range(other)
        except PartitionKeyError:
            continue  # a folder this warehouse would not have made: not a part of the dataset
        if _overlap(mine, theirs):
            clashes.append(other)
    if clashes:
        what = "the dataset built whole" if mine is None else f"shards {mine.first}-{mine.last}"
        raise PartitionConflictError(
            f"{what} of {dataset} would be counted twice: {', '.join(clashes)} "
            f"{'holds' if len(clashes) == 1 else 'hold'} them already (a dataset is published "
            "whole or as ranges that never overlap)",
            subject=f"{source} {key} in {root.url}",
            fix=f"drop what is in the way first (warehouse drop {source} {' '.join(clashes)}), "
            f"or re-cut the whole dataset in one command (warehouse recut {source} {dataset} "
            "SHARDS_PER_RANGE)",
        )
