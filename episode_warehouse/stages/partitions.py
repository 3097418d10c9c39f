"""Dropping a partition: every stage's artifact, the catalog's rows first.

:func:`drop_partition` removes every stage of one partition: its catalog rows and statistics
first (the counts stop at once), then the standardized, TED, decoded and raw artifacts, each by
its record first (a reader stops trusting it before its files go). It runs on a folder or a
``gs://`` root alike, through :meth:`~episode_warehouse.storage.Artifact.delete`. Which runs
may hold the partition is the caller's to check (the command line asks Dagster's run history).
"""

from __future__ import annotations

import logging

from episode_warehouse.catalog.store import CatalogStore
from episode_warehouse.paths import artifact_name
from episode_warehouse.storage import Root
from episode_warehouse.ted.dataset_parts import STAGES

log = logging.getLogger(__name__)


def drop_partition(root: Root, source: str, key: str) -> list[str]:
    """Remove every stage of ``source``/``key``: catalog rows and statistics first, then
    :data:`STAGES`; the names of the artifacts that were there.

    Raises:
        PartitionKeyError: ``key`` is not a usable partition key.
        ReadOnlyRootError: ``root`` was opened for reading.
    """
    removed = []
    if CatalogStore(root).remove_partition(source, key):
        removed.append(f"catalog/rows/{source}/{key}")
    for stage in STAGES:
        rel = artifact_name(stage, source, key)
        if root.artifact(rel).delete():
            removed.append(rel)
    log.info("dropped %s %s: %s", source, key, ", ".join(removed) or "nothing was there")
    return removed
