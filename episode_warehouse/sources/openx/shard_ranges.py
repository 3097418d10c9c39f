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

import re

from episode_warehouse.errors import ConfigError
from episode_warehouse.ted.chunks import ShardRange

_SETTING_RE = re.compile(r"^([a-z0-9_]+)=([0-9]+)$", re.ASCII)
SETTING = "OPENX_SHARD_RANGES"


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
    sizes: dict[str, int] = {}
    for part in (text or "").split(","):
        part = part.strip()
        if not part:
            continue
        match = _SETTING_RE.match(part)
        if not match or int(match.group(2)) < 1:
            raise ConfigError(
                f"shard range setting {part!r} is not dataset=N (N >= 1)",
                subject=SETTING,
                fix="write e.g. OPENX_SHARD_RANGES=droid=32",
            )
        sizes[match.group(1)] = int(match.group(2))
    return sizes
