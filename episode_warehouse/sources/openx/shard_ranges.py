"""Shard ranges: a large RLDS dataset as many partitions, each a run of consecutive shards.

DROID is 2,048 TFRecord shards (1.7 TB). As one partition it would be one run of a day on one
machine, restarted from zero when it fails. As ``droid@00000-00031``, ``droid@00032-00063``, ...
each range is an ordinary OpenX partition: its raw stage mirrors only its shards, its decoded,
TED, catalog and standardized stages are the ones every partition has, Dagster spreads the runs
over the cluster's workers, a killed worker loses only its range, and a changed shard rebuilds
only the range that holds it. The dataset is the union of its ranges: the catalog's ``dataset``
is the part before ``@``, ``open_ted`` opens the ranges' TEDs as one
(:mod:`~episode_warehouse.ted.chunks`, where the key's form is defined), and a mixture pools the
ranges' statistics into the dataset's.

A key is ``<dataset>@<first>-<last>``: shard indices (five digits, ``last`` included) in
``dataset_info.json``'s order (splits in order, then shards). ``OPENX_SHARD_RANGES``
(``droid=32``) says which datasets the sensor adds as ranges, of how many shards each.
"""

from __future__ import annotations

from episode_warehouse.errors import ConfigError
from episode_warehouse.partition_keys import ShardRange
from episode_warehouse.sources.openx.datasets import per_dataset

SETTING = "OPENX_SHARD_RANGES"
MAX_SHARDS = 100_000  # shards a range may span (the OXE datasets have at most 2,048)


def plan_ranges(dataset: str, shards: int, per_range: int) -> list[ShardRange]:
    """``shards`` shards cut into ranges of ``per_range`` (the last may be shorter)."""
    if per_range < 1:
        raise ConfigError("a shard range holds at least one shard", subject=SETTING)
    return [
        ShardRange(dataset, first, min(first + per_range, shards) - 1)
        for first in range(0, shards, per_range)
    ]


def parse_range_setting(text: str | None) -> dict[str, int]:
    """``droid=32,fractal20220817_data=64`` as ``{dataset: shards per range}``.

    Raises:
        ConfigError: an entry that is not ``dataset=N`` with N >= 1.
    """
    sizes = per_dataset(text, SETTING, "N", "droid=32", whole=True, maximum=MAX_SHARDS)
    return {dataset: int(size) for dataset, size in sizes.items()}
