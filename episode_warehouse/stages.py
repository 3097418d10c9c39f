"""The generic stages after the decoded one (TED, catalog rows), each one call of the
incremental rule; every source's raw and decoded stages live in its folder
(``sources/<name>/mirror.py``, ``sources/<name>/stage.py``, the latter over
:mod:`~episode_warehouse.decoded.stage`).

Every function here reads its upstream artifact's record (a clear error when it is missing),
states the stage's inputs (the upstream ``version`` and the code version), and calls
:func:`~episode_warehouse.incremental.build_if_changed`. The Dagster assets call exactly one of
these per materialization and return the result's ``version`` as their data version.

    raw (sources/<name>) -> decoded (sources/<name>) -> ted -> catalog rows -> (LeRobot exports)
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path

from episode_warehouse.catalog.records import RowsRecord
from episode_warehouse.decoded.record import DecodedRecord
from episode_warehouse.errors import CorruptInputError
from episode_warehouse.incremental import Built, build_if_changed, require
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.sources import registry
from episode_warehouse.ted.record import TedRecord

log = logging.getLogger(__name__)


def build_ted_stage(
    layout: WarehouseLayout, source: str, key: str, *, code_version: str
) -> Built[TedRecord]:
    """The TED of one partition, validated in staging before it is published.

    Raises:
        CorruptInputError: the TED built from the decoded episodes fails its consistency check
            (NaN rewards, broken boundaries); nothing is published.
    """
    from episode_warehouse.decoded import open_decoded
    from episode_warehouse.report.ted_report import write_ted_report
    from episode_warehouse.ted import build_ted
    from episode_warehouse.ted.layout import FORMAT_ID
    from episode_warehouse.ted.validate import check_ted

    decoded_dir = layout.decoded_dir(source, key)
    decoded = require(layout.root, decoded_dir, f"{source}_episodes", key, DecodedRecord)

    def build(tmp: Path) -> TedRecord:
        opened = open_decoded(decoded_dir)
        meta = build_ted(opened, tmp, fps=registry.fps(source, key, opened.meta.fps))
        report = check_ted(tmp)
        if not report.ok:
            raise CorruptInputError(
                "the TED fails its consistency check: " + "; ".join(report.problems[:5]),
                subject=f"{source} {key}",
                fix="the source data is malformed (see the findings); fix or remove it",
            )
        write_ted_report(tmp)
        return meta

    return build_if_changed(
        layout.root,
        layout.ted_dir(source, key),
        {"decoded": decoded.version, "code_version": code_version, "format": FORMAT_ID},
        build,
        record_type=TedRecord,
    )


def publish_catalog_rows(
    layout: WarehouseLayout, source: str, key: str, *, code_version: str, run_id: str
) -> Built[RowsRecord]:
    """The catalog rows of one partition (episodes and partitions tables) from its TED.

    Rows that describe the same TED are kept, with the lineage (run id, time) of the run that
    wrote them.
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
    )
    inputs = {"ted": ted.version, "code_version": code_version, "format": ROWS_FORMAT}
    return CatalogStore(layout.root).publish_partition(source, key, episodes, partition_row, inputs)
