"""What a source holds now: a fingerprint per partition, for sensors to compare with the last.

A fingerprint changes when a file of the partition is added, removed or rewritten (GCS
generation/crc32c; size and mtime for a local mirror; LFS hash on the hub), and only then. Only
listings are read, never file contents: a tick over a mirror of any size takes seconds. Each
source lists its own partitions (``sources/<name>/fingerprints.py``) through
:func:`partition_fingerprints`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from episode_warehouse.errors import PartitionKeyError
from episode_warehouse.incremental import fingerprint

log = logging.getLogger(__name__)


def partition_fingerprints(
    groups: dict[str, list], validate: Callable[[str], object], where: str
) -> dict[str, str]:
    """Digest each group of listed files whose key is a valid partition key (``validate``
    raises PartitionKeyError for the others, which are skipped with a warning naming
    ``where``)."""
    out = {}
    for key, files in groups.items():
        try:
            validate(key)
        except PartitionKeyError:
            log.warning("ignoring %r in the %s: not a valid partition key", key, where)
            continue
        out[key] = fingerprint(sorted(files))
    return out


def changed(previous: dict[str, str], current: dict[str, str]) -> list[str]:
    """Keys that are new or whose fingerprint differs (removed keys are not reported)."""
    return sorted(k for k, fp in current.items() if previous.get(k) != fp)
