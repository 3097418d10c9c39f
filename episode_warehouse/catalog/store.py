"""Publish and remove a partition's catalog rows; (re)build the DuckDB file of views.

Each partition's rows are one artifact of the incremental rule: a folder
``rows/<source>/<partition>/`` holding ``episodes.parquet``, ``partition.parquet`` and
``meta.json``, swapped in atomically, so a reader sees both tables of a partition from the same
version. The views read ``rows/*/[!.]*/<table>.parquet``: staging folders (``.staging-*``)
never match. The views name the files the partitions' records list, wherever the root keeps
them (:meth:`~episode_warehouse.storage.Root.published`).
"""

from __future__ import annotations

import logging
from pathlib import Path
from urllib.parse import quote, unquote

import pyarrow as pa
import pyarrow.parquet as pq

from episode_warehouse.catalog.records import RowsRecord
from episode_warehouse.catalog.schema import EPISODES, PARTITIONS, STATISTICS, TABLES, Table
from episode_warehouse.incremental import Built, build_if_changed
from episode_warehouse.storage import Root

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

    @property
    def folder(self) -> Path:
        """Where a writer builds the catalog's artifacts."""
        return self.root.folder / "catalog"

    @property
    def url(self) -> str:
        """Where the catalog's files are: the folder, or ``gs://.../catalog``."""
        return self.root.location("catalog")

    @property
    def db_path(self) -> Path:
        """The DuckDB file of views a writer keeps in a local root's catalog folder."""
        return self.folder / DB_NAME

    def partition_dir(self, source: str, partition: str, table: Table = EPISODES) -> Path:
        """The artifact folder of one partition's files of ``table`` (rows or statistics)."""
        return self.root.folder / _partition_rel(source, partition, table)

    def view_statements(self) -> list[str]:
        """``CREATE VIEW`` of every table over the files of its published partitions (an
        empty view of a table with no file yet, so that an older catalog still queries)."""
        statements = []
        for table in TABLES:
            files = self.root.table_files(f"catalog/{table.folder}", 2, table.file_name)
            statements.append(table.view_sql(files) if files else table.empty_view_sql())
        return statements

    def has_rows(self) -> bool:
        """Whether the catalog exists (its schema-only rows are published)."""
        return bool(self.root.artifact(f"catalog/{ROWS}/{_EMPTY}/_schema").read()[0])

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
            artifact = self.root.artifact(_partition_rel(source, partition, table))
            removed = artifact.delete() or removed
        return removed

    def published(self) -> list[tuple[str, str]]:
        """(source, partition) of every partition with rows."""
        return sorted(
            (rel.split("/")[2], unquote(rel.split("/")[3]))
            for rel in self.root.published(f"catalog/{ROWS}", 2)
            if rel.split("/")[2] != _EMPTY
        )

    def ensure_database(self, rebuild: bool = False) -> Path | None:
        """Publish the schema-only rows (so that the views work before any partition) and keep
        ``catalog.duckdb``, a file of views for other DuckDB clients, where the root's files are
        local files (see :meth:`~episode_warehouse.storage.Root.keep_views`); its path, or None.
        """
        for folder in sorted({t.folder for t in TABLES}):
            tables = [t for t in TABLES if t.folder == folder]
            build_if_changed(
                self.root,
                self.folder / folder / _EMPTY / "_schema",
                {"schemas": {t.name: t.arrow_schema.to_string() for t in tables}, "layout": LAYOUT},
                _empty_tables(tables),
            )
        key = f"{self.root.location('catalog')}|{LAYOUT}"
        return self.root.keep_views(f"catalog/{DB_NAME}", self.view_statements, key, rebuild)


def _partition_rel(source: str, partition: str, table: Table) -> str:
    return f"catalog/{table.folder}/{source}/{quote(partition, safe='')}"


def statistics_rel(source: str, partition: str) -> str:
    """The name under the root of a partition's statistics artifact."""
    return _partition_rel(source, partition, STATISTICS)
