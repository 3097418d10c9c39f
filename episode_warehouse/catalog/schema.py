"""The catalog's tables as typed Python data; Arrow schemas and view DDL are generated from it."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import pyarrow as pa


@dataclass(frozen=True)
class Column:
    name: str
    arrow: pa.DataType
    sql: str
    doc: str


@dataclass(frozen=True)
class Table:
    """A view of the catalog: ``folder/<source>/<partition>/file`` Parquet files of every
    partition (one artifact per partition and folder)."""

    name: str
    columns: tuple[Column, ...]
    doc: str
    folder: str = "rows"
    file: str = ""

    @property
    def file_name(self) -> str:
        return self.file or f"{self.name}.parquet"

    @property
    def arrow_schema(self) -> pa.Schema:
        return pa.schema([pa.field(c.name, c.arrow) for c in self.columns])

    @property
    def format_id(self) -> str:
        """``<name>/<hash of the column names and types>``: an input of the stage that writes
        this table, so a changed schema rebuilds every partition's files."""
        schema = ",".join(f"{c.name}:{c.arrow}" for c in self.columns)
        return f"{self.name}/{hashlib.sha256(schema.encode()).hexdigest()[:12]}"

    def view_sql(self, files: str | list[str]) -> str:
        """``CREATE VIEW`` over the Parquet files matching a glob, or a list of files (typed,
        ordered columns)."""
        cols = ",\n  ".join(f'CAST("{c.name}" AS {c.sql}) AS "{c.name}"' for c in self.columns)
        source = (
            _literal(files)
            if isinstance(files, str)
            else "[" + ", ".join(_literal(f) for f in files) + "]"
        )
        return (
            f"CREATE OR REPLACE VIEW {self.name} AS SELECT\n  {cols}\n"
            f"FROM read_parquet({source}, union_by_name = true)"
        )

    def empty_view_sql(self) -> str:
        """``CREATE VIEW`` of no rows with this table's columns (a catalog that has no files of
        it yet, e.g. one written before the table existed)."""
        cols = ",\n  ".join(f'CAST(NULL AS {c.sql}) AS "{c.name}"' for c in self.columns)
        return f"CREATE OR REPLACE VIEW {self.name} AS SELECT\n  {cols}\nLIMIT 0"

    def markdown(self) -> str:
        rows = "\n".join(f"| `{c.name}` | {c.sql} | {c.doc} |" for c in self.columns)
        return (
            f"### `{self.name}`\n{self.doc}\n\n| column | type | meaning |\n|---|---|---|\n{rows}"
        )


_EPISODE_COLUMNS = (
    Column("episode", pa.int64(), "BIGINT", "episode id within the partition (TED `episode`)"),
    Column("start", pa.int64(), "BIGINT", "first row of the episode in the partition's TED"),
    Column("length", pa.int64(), "BIGINT", "number of steps"),
    Column(
        "return",
        pa.float64(),
        "DOUBLE",
        "sum of the episode's rewards (Atari: clipped to [-1, 1], as logged); null where the "
        "source records no reward (LeRobot teleoperation datasets)",
    ),
    Column("terminated", pa.bool_(), "BOOLEAN", "ends in a terminal state (bootstrap zero)"),
    Column(
        "truncated",
        pa.bool_(),
        "BOOLEAN",
        "ends without a terminal state: cut by a file or gap, a recording's end, or Atari's "
        "27,000-step time limit",
    ),
    Column("true_start", pa.bool_(), "BOOLEAN", "provably starts at the episode's first step"),
    Column(
        "complete",
        pa.bool_(),
        "BOOLEAN",
        "the whole episode: true_start, and it ended (terminated, or Atari's time limit)",
    ),
    Column("language_instruction", pa.string(), "VARCHAR", "task text (null for Atari)"),
    Column("source_files", pa.list_(pa.string()), "VARCHAR[]", "files/shards it came from"),
    Column("checkpoint_idx", pa.int64(), "BIGINT", "RL Unplugged: the source's checkpoint id"),
    Column("episode_idx", pa.int64(), "BIGINT", "RL Unplugged: the source's episode id"),
    Column(
        "recorded_return",
        pa.float64(),
        "DOUBLE",
        "RL Unplugged: the record's episode_return (checked equal to `return` when decoded)",
    ),
    Column("tasks", pa.list_(pa.string()), "VARCHAR[]", "LeRobot: every task of the episode"),
    Column(
        "lerobot_stats",
        pa.string(),
        "JSON",
        "LeRobot: the dataset's own per-episode statistics, {feature: {min, max, mean, ...}}",
    ),
)

# What a decoder writes per episode (decoded and TED ``episodes.parquet``).
EPISODE_DATA = Table("episode_data", _EPISODE_COLUMNS, "Per-episode columns of one partition.")

EPISODES = Table(
    "episodes",
    (
        Column("source", pa.string(), "VARCHAR", "'atari', 'openx' or 'lerobot'"),
        Column("partition", pa.string(), "VARCHAR", "partition key, e.g. 'Pong/5', 'cmu_stretch'"),
        *_EPISODE_COLUMNS,
        Column("source_version", pa.string(), "VARCHAR", "version of the raw source files"),
        Column("code_version", pa.string(), "VARCHAR", "code version of the asset that wrote it"),
        Column("run_id", pa.string(), "VARCHAR", "Dagster run that wrote it"),
        Column("materialized_at", pa.timestamp("us", tz="UTC"), "TIMESTAMPTZ", "when"),
    ),
    "One row per episode (fragment) of every materialized partition.",
)

PARTITIONS = Table(
    "partitions",
    (
        Column("source", pa.string(), "VARCHAR", "'atari', 'openx' or 'lerobot'"),
        Column("partition", pa.string(), "VARCHAR", "partition key"),
        Column("frames", pa.int64(), "BIGINT", "steps in the partition's TED"),
        Column("episodes", pa.int64(), "BIGINT", "episodes in the partition"),
        Column("bytes_on_disk", pa.int64(), "BIGINT", "bytes of the TED folder (hard links once)"),
        Column("data_version", pa.string(), "VARCHAR", "version of the TED (Dagster data version)"),
        Column("code_version", pa.string(), "VARCHAR", "code version of the TED asset"),
        Column("run_id", pa.string(), "VARCHAR", "Dagster run that wrote the rows"),
        Column("materialized_at", pa.timestamp("us", tz="UTC"), "TIMESTAMPTZ", "when"),
        Column("source_url", pa.string(), "VARCHAR", "where the source files were read"),
        Column("fps", pa.int64(), "BIGINT", "steps per second (LeRobot: info.json's fps)"),
        Column("robot_type", pa.string(), "VARCHAR", "LeRobot: info.json's robot_type"),
    ),
    "One row per materialized partition.",
    file="partition.parquet",
)

STATISTICS = Table(
    "statistics",
    (
        Column("source", pa.string(), "VARCHAR", "'atari', 'openx' or 'lerobot'"),
        Column("partition", pa.string(), "VARCHAR", "partition key"),
        Column("episode", pa.int64(), "BIGINT", "episode id within the partition"),
        Column("key", pa.string(), "VARCHAR", "TED key, nested parts joined by '/'"),
        Column("count", pa.int64(), "BIGINT", "values per feature dimension (steps x pixels)"),
        Column("mean", pa.list_(pa.float64()), "DOUBLE[]", "per feature dimension"),
        Column("m2", pa.list_(pa.float64()), "DOUBLE[]", "sum of squared deviations, per dim"),
        Column("min", pa.list_(pa.float64()), "DOUBLE[]", "per feature dimension"),
        Column("max", pa.list_(pa.float64()), "DOUBLE[]", "per feature dimension"),
        Column("hist", pa.list_(pa.float32()), "FLOAT[]", "256-bin histogram per dim, [min, max]"),
    ),
    "Per-episode partial statistics of every numeric TED key (the statistics asset): "
    "`selection_stats` merges them exactly (moments, extremes) or within 0.8% (quantiles).",
    folder="statistics",
)

TABLES = (EPISODES, PARTITIONS, STATISTICS)
ROWS_FORMAT = f"{EPISODES.format_id}+{PARTITIONS.format_id}"  # the catalog rows stage's format


def schema_markdown() -> str:
    """The tables as Markdown (docs/catalog.md embeds this; a test keeps them in sync)."""
    return "\n\n".join(t.markdown() for t in TABLES)


def _literal(text: str) -> str:
    """``text`` as a SQL string literal."""
    return "'" + text.replace("'", "''") + "'"
