"""Dropping a partition: every stage's artifact, the catalog's rows first, as a writer.

:func:`drop_partition` removes every stage of one partition: its catalog rows, statistics and
scores first (the counts stop at once), then the standardized, TED, decoded and raw artifacts,
and its LeRobot exports, each by its record first (a reader stops trusting it before its files
go). It runs on a folder or a ``gs://`` root alike, through
:meth:`~episode_warehouse.storage.Artifact.delete`.

A drop is a writer: it holds the writer lock of every artifact it removes, so a stage still
building one of them publishes first and is then removed (never after), and each stage reads
its upstream record again before it publishes (``build_if_changed(upstream=...)``): a catalog
stage whose TED was dropped under it publishes nothing. Taking a lock sweeps the staging debris
of a drop killed midway. On a bucket root another machine's writer is stopped by the record's
generation precondition (a deleted record fails it). Which runs may hold the partition is the
caller's to check as well (the command line asks Dagster's run history).
"""

from __future__ import annotations

import logging
from contextlib import ExitStack

from episode_warehouse.atomic import write_lock
from episode_warehouse.catalog.store import CatalogStore
from episode_warehouse.export.record import ExportRecord
from episode_warehouse.export.request import partition_export_name
from episode_warehouse.paths import artifact_name
from episode_warehouse.storage import Root
from episode_warehouse.ted.dataset_parts import STAGES

log = logging.getLogger(__name__)


def _exports(source: str, key: str) -> list[str]:
    """The names under the root of the partition's LeRobot exports (lossless and video)."""
    return [f"lerobot/{partition_export_name(source, key, video=v)}" for v in (False, True)]


def drop_partition(root: Root, source: str, key: str) -> list[str]:
    """Remove every stage of ``source``/``key``, as a writer (see the module): catalog rows,
    statistics and scores first, then :data:`STAGES`, then its exports; the names of the
    artifacts that were there.

    Raises:
        PartitionKeyError: ``key`` is not a usable partition key.
        ReadOnlyRootError: ``root`` was opened for reading.
        ConcurrentWriteError: a writer of one of them held its lock past the timeout.
    """
    catalog = [(rel, root.artifact(rel)) for rel in CatalogStore(root).partition_rels(source, key)]
    stages = [(rel, root.artifact(rel)) for rel in (artifact_name(s, source, key) for s in STAGES)]
    exports = [(rel, root.artifact(rel, ExportRecord.FILE)) for rel in _exports(source, key)]
    removed = []
    with ExitStack() as locks:
        for rel, _ in (*catalog, *stages, *exports):  # (sweeps a killed drop's debris)
            locks.enter_context(write_lock(root.folder / rel))
        for rel, artifact in (*catalog, *stages, *exports):
            if artifact.delete():
                removed.append(rel)
    log.info("dropped %s %s: %s", source, key, ", ".join(removed) or "nothing was there")
    return removed
