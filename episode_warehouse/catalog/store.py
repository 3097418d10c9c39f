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
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote, unquote

import pyarrow as pa
import pyarrow.parquet as pq

from episode_warehouse.catalog.records import DuplicatesRecord, RowsRecord, ScoresRecord
from episode_warehouse.catalog.schema import (
    CURATION_TABLES,
    DUPLICATES,
    EPISODE_KEY,
    EPISODES,
    PARTITIONS,
    SCORES,
    STATISTICS,
    TABLES,
    UNCHECKED,
    Table,
)
from episode_warehouse.curation.scores import SCORE_NAME
from episode_warehouse.errors import ConfigError
from episode_warehouse.incremental import Built, build_if_changed
from episode_warehouse.storage import Root

log = logging.getLogger(__name__)
DB_NAME = "catalog.duckdb"
ROWS = "rows"
_EMPTY = "_empty"  # a schema-only row set, so that the views work before any partition
LAYOUT = 5  # of the folders the views read; an older catalog.duckdb is rebuilt
ROW_VIEW = "episode_rows"  # the episodes' files; the episodes view joins the curation columns
DUPLICATES_REL = "catalog/duplicates/warehouse/all"  # one artifact for the whole warehouse


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
        for table in (*TABLES, *CURATION_TABLES):
            name = ROW_VIEW if table is EPISODES else table.name
            files = self.root.table_files(f"catalog/{table.folder}", table.depth, table.file_name)
            statements.append(table.view_sql(files, name) if files else table.empty_view_sql(name))
        statements.append(episodes_view_sql(self.score_names()))
        return statements

    def score_names(self) -> list[str]:
        """The scores with a published partition (names checked: they become column names)."""
        names = {rel.split("/")[2] for rel in self.root.published(f"catalog/{SCORES.folder}", 3)}
        bad = sorted(n for n in names if not SCORE_NAME.match(n))
        if bad:
            log.warning("catalog: scores %s are not column names: left out of episodes", bad)
        return sorted(n for n in names if SCORE_NAME.match(n))

    def publish_duplicates(
        self, inputs: dict, find: Callable[[], tuple[pa.Table, DuplicatesRecord]]
    ) -> Built[DuplicatesRecord]:
        """Replace the warehouse's duplicates table with ``find()`` unless it was built from the
        same ``inputs`` (``find`` is not called then)."""

        def build(tmp: Path) -> DuplicatesRecord:
            duplicates, record = find()
            schema = DUPLICATES.arrow_schema
            pq.write_table(duplicates.select(schema.names).cast(schema), tmp / DUPLICATES.file_name)
            return record

        return build_if_changed(self.root, self.root.folder / DUPLICATES_REL, inputs, build,
                                record_type=DuplicatesRecord)  # fmt: skip

    def score_dir(self, name: str, source: str, partition: str) -> Path:
        """The artifact folder of one score of one partition."""
        return self.root.folder / _score_rel(name, source, partition)

    def publish_scores(
        self,
        name: str,
        source: str,
        partition: str,
        inputs: dict,
        score: Callable[[], pa.Table],
        upstream: dict[Path, str] | None = None,
    ) -> Built[ScoresRecord]:
        """Replace one score's values of one partition with ``score()`` unless they were built
        from the same ``inputs`` (``score`` is not called then)."""
        if not SCORE_NAME.match(name):
            raise ConfigError(
                f"a score named {name!r}", subject="score",
                fix="name it with lower-case letters, digits and _ (it becomes score_<name>)",
            )  # fmt: skip

        def build(tmp: Path) -> ScoresRecord:
            scores = score()
            schema = SCORES.arrow_schema
            pq.write_table(scores.select(schema.names).cast(schema), tmp / SCORES.file_name)
            values = scores.column("value")
            return ScoresRecord(episodes=len(scores), scored=len(scores) - values.null_count)

        return build_if_changed(self.root, self.score_dir(name, source, partition), inputs, build,
                                record_type=ScoresRecord, upstream=upstream)  # fmt: skip

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
        self,
        source: str,
        key: str,
        episodes: pa.Table,
        partition_row: dict,
        inputs: dict,
        upstream: dict[Path, str] | None = None,
    ) -> Built[RowsRecord]:
        """Replace the rows of one partition unless they were built from the same ``inputs``
        (``upstream``: the TED they were computed from, checked again before they publish)."""
        self.ensure_database()

        def build(tmp: Path) -> RowsRecord:
            self.write_rows(tmp, episodes, partition_row)
            return RowsRecord(episodes=episodes.num_rows, frames=partition_row["frames"])

        built = build_if_changed(self.root, self.partition_dir(source, key), inputs, build,
                                 record_type=RowsRecord, upstream=upstream)  # fmt: skip
        if built.rebuilt:
            log.info("catalog: published %d episodes of %s/%s", episodes.num_rows, source, key)
        return built

    def partition_rels(self, source: str, partition: str) -> list[str]:
        """The names under the root of a partition's catalog artifacts: its rows first (the
        counts stop at once), its statistics, then each score."""
        rels = [_partition_rel(source, partition, t) for t in (EPISODES, STATISTICS)]
        return rels + [_score_rel(name, source, partition) for name in self.score_names()]

    def remove_partition(self, source: str, partition: str) -> bool:
        """Remove a partition's rows, statistics and scores; True if there were any."""
        removed = False
        for rel in self.partition_rels(source, partition):
            removed = self.root.artifact(rel).delete() or removed
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


def _score_rel(name: str, source: str, partition: str) -> str:
    return f"catalog/{SCORES.folder}/{name}/{source}/{quote(partition, safe='')}"


def episodes_view_sql(scores: list[str]) -> str:
    """The ``episodes`` view: the rows with their duplicate status and one ``score_<name>``
    column per score (``scores``: checked names), each joined only where it was computed from
    the episode as it is now (its ``content_hash``): a derived row of an episode rebuilt or of a
    kept episode dropped since is ignored, never read as current (docs/curation.md)."""
    pivot = "".join(f", max(value) FILTER (WHERE score = '{n}') AS \"score_{n}\"" for n in scores)
    picked = "".join(f', s."score_{n}"' for n in scores)
    keys = [c.name for c in EPISODE_KEY]

    def on(alias: str) -> str:
        return " AND ".join(f"r.{k} = {alias}.{k}" for k in [*keys, "content_hash"])

    stale = "d.episode IS NULL OR (d.near_duplicate_of IS NOT NULL AND k.episode IS NULL)"
    return (
        f"CREATE OR REPLACE VIEW episodes AS SELECT r.*, "
        f"CASE WHEN {stale} THEN '{UNCHECKED}' ELSE d.near_duplicate_of END "
        f"AS near_duplicate_of, "
        f"CASE WHEN {stale} THEN NULL ELSE d.duplicate_group END AS duplicate_group{picked}\n"
        f"FROM {ROW_VIEW} r\nLEFT JOIN {DUPLICATES.name} d ON {on('d')}\n"
        f"LEFT JOIN {ROW_VIEW} k ON d.near_duplicate_of IS NOT NULL AND k.source = d.kept_source "
        "AND k.partition = d.kept_partition AND k.episode = d.kept_episode "
        "AND k.content_hash = d.kept_hash\n"
        + (
            f"LEFT JOIN (SELECT {', '.join(keys)}, content_hash{pivot} FROM {SCORES.name} "
            f"GROUP BY {', '.join(keys)}, content_hash) s ON {on('s')}"
            if scores
            else ""
        )
    )


def statistics_rel(source: str, partition: str) -> str:
    """The name under the root of a partition's statistics artifact."""
    return _partition_rel(source, partition, STATISTICS)
