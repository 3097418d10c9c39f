"""The catalog stage: a partition's catalog rows (episodes and partitions tables) from its TED
(one call of the incremental rule)."""

from __future__ import annotations

from datetime import UTC, datetime

from episode_warehouse.catalog.records import RowsRecord
from episode_warehouse.incremental import Built, require
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.ted.record import TedRecord


def publish_catalog_rows(
    layout: WarehouseLayout,
    source: str,
    key: str,
    *,
    code_version: str,
    run_id: str,
    curation: bool = True,
) -> Built[RowsRecord]:
    """The catalog rows of one partition (episodes and partitions tables) from its TED.

    Rows that describe the same TED are kept, with the lineage (run id, time) of the run that
    wrote them. ``curation=False`` leaves the audit and the duplicate signatures out (NULL):
    the stage as it was before them, ``bench.curation``'s baseline.
    """
    from episode_warehouse.catalog import CatalogStore
    from episode_warehouse.catalog.rows import catalog_rows
    from episode_warehouse.catalog.schema import ROWS_FORMAT

    ted_dir = layout.ted_dir(source, key)
    ted = require(layout.root, ted_dir, f"{source}_ted", key, TedRecord)
    episodes, partition_row = catalog_rows(
        ted_dir,
        source,
        key,
        code_version=code_version,
        run_id=run_id,
        data_version=ted.version,
        materialized_at=datetime.now(UTC),
        curation=curation,
    )
    inputs = {"ted": ted.version, "code_version": code_version, "format": ROWS_FORMAT,
              **({} if curation else {"curation": False})}  # fmt: skip
    return CatalogStore(layout.root).publish_partition(
        source, key, episodes, partition_row, inputs, upstream={ted_dir: ted.version}
    )
