"""Publish and remove a partition's catalog rows; (re)build the DuckDB file of views.

Each partition's rows are one artifact of the incremental rule: a folder
``rows/<source>/<partition>/`` holding ``episodes.parquet``, ``partition.parquet`` and
``meta.json``, swapped in atomically, so a reader sees both tables of a partition from the same
version. The views read ``rows/*/[!.]*/<table>.parquet``: staging folders (``.staging-*``)
never match. With a bucket root the views read the Parquet files the partitions' records list
in the bucket (:mod:`episode_warehouse.bucket.catalog_files`).
"""

from __future__ import annotations

import logging
import os
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote, unquote

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from episode_warehouse.atomic import staging_path, unpublish
from episode_warehouse.bucket.root import BucketRoot
from episode_warehouse.catalog.records import RowsRecord
from episode_warehouse.catalog.schema import EPISODES, PARTITIONS, STATISTICS, TABLES, Table
from episode_warehouse.incremental import Built, build_if_changed
from episode_warehouse.records import RECORD
from episode_warehouse.roots import Root

log = logging.getLogger(__name__)
DB_NAME = "catalog.duckdb"
ROWS = "rows"
_EMPTY = "_empty"  # a schema-only row set, so that the views work before any partition
LAYOUT = 4  # of the folders the views read; an older catalog.duckdb is rebuilt


def _empty_tables(tables: list[Table]):
    def write(folder: Path) -> None:
        for table in tables:
            pq.write_table(table.arrow_schema.empty_table(), folder / table.file_name)

    return write


class CatalogStore:
    """The catalog of one warehouse root (its ``catalog/`` folder)."""

    def __init__(self, root: Root) -> None:
        self.root = root
        self.folder = root.folder / "catalog"
        self.bucket: BucketRoot | None = root.bucket

    @property
    def url(self) -> str:
        """Where the catalog's files are: the folder, or ``gs://.../catalog``."""
        return f"{self.bucket.url}/catalog" if self.bucket else str(self.folder)

    @property
    def db_path(self) -> Path:
        return self.folder / DB_NAME

    def partition_dir(self, source: str, partition: str, table: Table = EPISODES) -> Path:
        """The artifact folder of one partition's files of ``table`` (rows or statistics)."""
        return self.folder / table.folder / source / quote(partition, safe="")

    def glob(self, table: Table) -> str:
        """The Parquet files of ``table`` across every published partition."""
        return str(self.folder / table.folder / "*" / "[!.]*" / table.file_name)

    def view_statements(self) -> list[str]:
        """``CREATE VIEW`` of every table over this folder's row files (an empty view of a table
        with no file yet, so that a catalog written by an older version still queries)."""
        if self.bucket is not None:
            return self._bucket_view_statements(self.bucket)
        return [
            table.view_sql(self.glob(table))
            if next(self.folder.glob(self.glob(table).removeprefix(str(self.folder) + "/")), None)
            else table.empty_view_sql()
            for table in TABLES
        ]

    @staticmethod
    def _bucket_view_statements(bucket: BucketRoot) -> list[str]:
        from episode_warehouse.bucket.catalog_files import partition_records, table_urls

        records = {f: partition_records(bucket, f) for f in {t.folder for t in TABLES}}
        statements = []
        for table in TABLES:
            urls = table_urls(bucket, records[table.folder], table.file_name)
            statements.append(table.view_sql(urls) if urls else table.empty_view_sql())
        return statements

    def has_rows(self) -> bool:
        """Whether the catalog exists (its database file, or with a bucket its schema rows)."""
        if self.bucket is None:
            return self.db_path.exists()
        return self.bucket.store().stat(f"catalog/{ROWS}/{_EMPTY}/_schema/{RECORD}") is not None

    @staticmethod
    def write_rows(folder: Path, episodes: pa.Table, partition_row: dict) -> None:
        """Write one partition's two tables into ``folder`` (a staging folder)."""
        for table, data in (
            (EPISODES, episodes),
            (PARTITIONS, pa.Table.from_pylist([partition_row], schema=PARTITIONS.arrow_schema)),
        ):
            schema = table.arrow_schema
            for f in schema:  # columns added since the TED was written: nulls
                if f.name not in data.column_names:
                    data = data.append_column(f.name, pa.nulls(data.num_rows, f.type))
            pq.write_table(data.select(schema.names).cast(schema), folder / table.file_name)

    def publish_partition(
        self, source: str, key: str, episodes: pa.Table, partition_row: dict, inputs: dict
    ) -> Built[RowsRecord]:
        """Replace the rows of one partition unless they were built from the same ``inputs``."""
        self.ensure_database()

        def build(tmp: Path) -> RowsRecord:
            self.write_rows(tmp, episodes, partition_row)
            return RowsRecord(episodes=episodes.num_rows, frames=partition_row["frames"])

        built = build_if_changed(
            self.root, self.partition_dir(source, key), inputs, build, record_type=RowsRecord
        )
        if built.rebuilt:
            log.info("catalog: published %d episodes of %s/%s", episodes.num_rows, source, key)
        return built

    def remove_partition(self, source: str, partition: str) -> bool:
        """Remove a partition's rows and statistics; True if there were any."""
        removed = False
        for table in (STATISTICS, EPISODES):
            folder = self.partition_dir(source, partition, table)
            remote = self.root.remote(folder, RECORD)
            if remote is not None:
                removed = remote.delete() or removed
            removed = unpublish(folder) or removed
        return removed

    def published(self) -> list[tuple[str, str]]:
        """(source, partition) of every partition with rows."""
        if self.bucket is not None:
            from episode_warehouse.bucket.catalog_files import partition_records

            rels = partition_records(self.bucket, ROWS)
            return sorted(
                (rel.split("/")[2], unquote(rel.split("/")[3]))
                for rel in rels
                if rel.split("/")[2] != _EMPTY
            )
        return sorted(
            (p.parent.parent.name, unquote(p.parent.name))
            for p in (self.folder / ROWS).glob(f"*/[!.]*/{RECORD}")
            if p.parent.parent.name != _EMPTY
        )

    def ensure_database(self, rebuild: bool = False) -> Path:
        """Create catalog.duckdb (views over the Parquet files) if missing or asked to.

        The file is built aside and renamed into place, so readers holding the old one keep
        working; it holds no data, only views, so it never needs a writer while rows change.
        """
        for folder in sorted({t.folder for t in TABLES}):  # schema-only files: views work empty
            tables = [t for t in TABLES if t.folder == folder]
            build_if_changed(
                self.root,
                self.folder / folder / _EMPTY / "_schema",
                {"schemas": {t.name: t.arrow_schema.to_string() for t in tables}, "layout": LAYOUT},
                _empty_tables(tables),
            )
        if self.bucket is not None:  # queries read the bucket (catalog_files), not a file here
            return self.db_path
        if self.db_path.exists() and not rebuild and self._views_point_here():
            return self.db_path
        tmp = staging_path(self.db_path)
        con = duckdb.connect(str(tmp))
        try:
            for statement in self.view_statements():
                con.execute(statement)
            con.execute(
                "CREATE OR REPLACE TABLE catalog_info AS "
                "SELECT ? AS root, ? AS layout, ? AS built_at",
                [str(self.folder), LAYOUT, datetime.now(UTC)],
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
            row = con.execute("SELECT root, layout FROM catalog_info").fetchone()
        except duckdb.Error:
            return False
        finally:
            con.close()
        return row is not None and tuple(row) == (str(self.folder), LAYOUT)
