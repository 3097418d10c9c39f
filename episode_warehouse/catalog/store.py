"""Publish and remove a partition's catalog rows; (re)build the DuckDB file of views."""

from __future__ import annotations

import logging
import os
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from episode_warehouse.atomic import publish, staging_path, unpublish
from episode_warehouse.catalog.schema import EPISODES, PARTITIONS, TABLES, Table

log = logging.getLogger(__name__)
DB_NAME = "catalog.duckdb"
_EMPTY = "_empty"


class CatalogStore:
    """The catalog folder of one warehouse root."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)

    @property
    def db_path(self) -> Path:
        return self.folder / DB_NAME

    def _file(self, table: Table, source: str, partition: str) -> Path:
        return self.folder / table.name / source / f"{quote(partition, safe='')}.parquet"

    def _write(self, table: Table, source: str, partition: str, data: pa.Table) -> Path:
        target = self._file(table, source, partition)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = staging_path(target)
        pq.write_table(data.select(table.arrow_schema.names).cast(table.arrow_schema), tmp)
        publish(tmp, target)
        return target

    def publish_partition(
        self, source: str, partition: str, episodes: pa.Table, partition_row: dict
    ) -> None:
        """Replace the rows of one partition (episodes first, then its partitions row)."""
        self.ensure_database()
        self._write(EPISODES, source, partition, episodes)
        self._write(
            PARTITIONS,
            source,
            partition,
            pa.Table.from_pylist([partition_row], schema=PARTITIONS.arrow_schema),
        )
        log.info("catalog: published %d episodes of %s/%s", episodes.num_rows, source, partition)

    def partition_row(self, source: str, partition: str) -> dict | None:
        """The published ``partitions`` row of one partition, or None."""
        path = self._file(PARTITIONS, source, partition)
        if not path.is_file():
            return None
        rows = pq.read_table(path).to_pylist()
        return rows[0] if rows else None

    def remove_partition(self, source: str, partition: str) -> bool:
        """Remove a partition's rows; True if there were any."""
        removed = unpublish(self._file(PARTITIONS, source, partition))
        return unpublish(self._file(EPISODES, source, partition)) or removed

    def published(self) -> list[tuple[str, str]]:
        """(source, partition) of every partition with rows."""
        from urllib.parse import unquote

        base = self.folder / PARTITIONS.name
        return sorted(
            (p.parent.name, unquote(p.stem))
            for p in base.glob("*/*.parquet")
            if p.parent.name != _EMPTY
        )

    def ensure_database(self, rebuild: bool = False) -> Path:
        """Create catalog.duckdb (views over the Parquet files) if missing or asked to.

        The file is built aside and renamed into place, so readers holding the old one keep
        working; it holds no data, only views, so it never needs a writer while rows change.
        """
        for table in TABLES:
            empty = self.folder / table.name / _EMPTY / "_schema.parquet"
            if not empty.exists():
                empty.parent.mkdir(parents=True, exist_ok=True)
                tmp = staging_path(empty)
                pq.write_table(table.arrow_schema.empty_table(), tmp)
                os.replace(tmp, empty)
        if self.db_path.exists() and not rebuild and self._views_point_here():
            return self.db_path
        tmp = staging_path(self.db_path)
        con = duckdb.connect(str(tmp))
        try:
            for table in TABLES:
                con.execute(table.view_sql(str(self.folder / table.name / "*" / "*.parquet")))
            con.execute(
                "CREATE OR REPLACE TABLE catalog_info AS SELECT ? AS root, ? AS built_at",
                [str(self.folder), datetime.now(UTC)],
            )
        finally:
            con.close()
        os.replace(tmp, self.db_path)
        Path(str(tmp) + ".wal").unlink(missing_ok=True)
        return self.db_path

    def _views_point_here(self) -> bool:
        try:
            con = duckdb.connect(str(self.db_path), read_only=True)
        except duckdb.Error:
            return False
        try:
            root = con.execute("SELECT root FROM catalog_info").fetchone()[0]
        except duckdb.Error:
            return False
        finally:
            con.close()
        return root == str(self.folder)
