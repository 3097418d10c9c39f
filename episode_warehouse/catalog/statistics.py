"""The catalog's ``statistics`` table: per-episode partial statistics of each partition's TED.

One artifact per partition (``catalog/statistics/<source>/<partition>/statistics.parquet``,
rebuilt when the TED's version changes), read by ``selection_stats`` so that the statistics of a
selection of whole episodes cost a query, not a pass over the data.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from episode_warehouse.catalog.records import StatisticsRecord
from episode_warehouse.catalog.schema import STATISTICS
from episode_warehouse.catalog.store import CatalogStore, statistics_rel
from episode_warehouse.incremental import Built, build_if_changed
from episode_warehouse.paths import WarehouseLayout, artifact_name
from episode_warehouse.storage import Root, parse_root
from episode_warehouse.ted.record import TedRecord


def publish_statistics(
    layout: WarehouseLayout, source: str, partition: str, *, code_version: str
) -> Built[StatisticsRecord]:
    """Compute (once per TED version) and publish one partition's statistics rows."""
    from episode_warehouse.incremental import require
    from episode_warehouse.ted.open import open_ted_folder
    from episode_warehouse.ted.statistics import numeric_keys, partition_partials

    ted_dir = layout.ted_dir(source, partition)
    ted = require(layout.root, ted_dir, f"{source}_ted", partition, TedRecord)
    store = CatalogStore(layout.root)
    store.ensure_database()

    def build(tmp: Path) -> StatisticsRecord:
        td = open_ted_folder(ted_dir)
        episodes = pq.read_table(ted_dir / "episodes.parquet")
        keys = numeric_keys(td)
        table = partition_partials(
            td, episodes.column("start").to_numpy(), episodes.column("length").to_numpy(), keys
        )
        n = table.num_rows
        table = table.add_column(0, "partition", pa.array([partition] * n, pa.string()))
        table = table.add_column(0, "source", pa.array([source] * n, pa.string()))
        pq.write_table(table.cast(STATISTICS.arrow_schema), tmp / STATISTICS.file_name)
        return StatisticsRecord(
            keys=[k if isinstance(k, str) else "/".join(k) for k in keys], rows=n
        )

    return build_if_changed(
        layout.root,
        store.partition_dir(source, partition, STATISTICS),
        {"ted": ted.version, "code_version": code_version, "format": STATISTICS.format_id},
        build,
        record_type=StatisticsRecord,
        upstream={ted_dir: ted.version},
    )


def read_partition_statistics(
    root: Root | str | os.PathLike, source: str, partition: str
) -> pa.Table | None:
    """The partition's statistics rows when they describe its current TED, else None (read
    from the root; nothing is written)."""
    root = parse_root(root)
    artifact = root.artifact(statistics_rel(source, partition))
    data, _ = artifact.read()
    if not data:
        return None
    record = StatisticsRecord.from_json(data, subject=f"{artifact.url}/{StatisticsRecord.FILE}")
    ted = root.artifact(artifact_name("ted", source, partition)).read()[0].get("version")
    if record.inputs.get("ted") != ted:
        return None
    return pq.read_table(io.BytesIO(artifact.read_file(data, STATISTICS.file_name)))
