"""The catalog's tables as typed Python data; Arrow schemas and view DDL are generated from it."""

from __future__ import annotations

import pyarrow as pa

from episode_warehouse.decoded.episode_table import EPISODE_COLUMNS, EPISODE_DATA
from episode_warehouse.tables import Column, Table

__all__ = ["EPISODE_DATA", "EPISODES", "PARTITIONS", "STATISTICS", "TABLES", "Column", "Table"]


EPISODES = Table(
    "episodes",
    (
        Column("source", pa.string(), "VARCHAR", "'atari', 'openx' or 'lerobot'"),
        Column("partition", pa.string(), "VARCHAR", "partition key, e.g. 'Pong/5', 'cmu_stretch'"),
        Column(
            "dataset",
            pa.string(),
            "VARCHAR",
            "the dataset the partition is, or is a shard range of ('droid' for "
            "'droid@00000-00031')",
        ),
        *EPISODE_COLUMNS,
        Column("source_version", pa.string(), "VARCHAR", "version of the raw source files"),
        Column("code_version", pa.string(), "VARCHAR", "code version of the asset that wrote it"),
        Column("run_id", pa.string(), "VARCHAR", "Dagster run that wrote it"),
        Column("materialized_at", pa.timestamp("us", tz="UTC"), "TIMESTAMPTZ", "when"),
        Column(
            "idle_fraction",
            pa.float64(),
            "DOUBLE",
            "share of steps after the first at which no action or state dimension moved more "
            "than 0.1% of its range in the partition (see Quality signals)",
        ),
        Column(
            "jerk",
            pa.float64(),
            "DOUBLE",
            "0.95 quantile of the RMS of the action's second difference, per-dimension "
            "standardized; NULL for discrete actions (see Quality signals)",
        ),
        Column("length_z", pa.float64(), "DOUBLE", "length as a z-score within the partition"),
        Column("return_z", pa.float64(), "DOUBLE", "return as a z-score within the partition"),
        Column(
            "success",
            pa.bool_(),
            "BOOLEAN",
            "DROID: '/success/' in episode_metadata/file_path, as DROID's own code reads it; "
            "NULL where the dataset records no outcome (see Episode facts)",
        ),
        Column("building", pa.string(), "VARCHAR", "DROID: episode_metadata/building (the lab)"),
        Column("collector_id", pa.string(), "VARCHAR", "DROID: episode_metadata/collector_id"),
        Column("recorded_on", pa.date32(), "DATE", "DROID: episode_metadata/date"),
        Column(
            "instructions",
            pa.list_(pa.string()),
            "VARCHAR[]",
            "every language instruction of the first step (DROID: three), in leaf order",
        ),
        Column(
            "nonidle_ranges",
            pa.list_(pa.list_(pa.int64())),
            "BIGINT[][]",
            "openpi's idle filter over action_dict/joint_velocity: [start, stop) step ranges "
            "within the episode that its DROID training keeps (see Episode facts)",
        ),
        Column("nonidle_steps", pa.int64(), "BIGINT", "steps in nonidle_ranges"),
    ),
    "One row per episode (fragment) of every materialized partition.",
)

PARTITIONS = Table(
    "partitions",
    (
        Column("source", pa.string(), "VARCHAR", "'atari', 'openx' or 'lerobot'"),
        Column("partition", pa.string(), "VARCHAR", "partition key"),
        Column("dataset", pa.string(), "VARCHAR", "the dataset it is, or is a shard range of"),
        Column("frames", pa.int64(), "BIGINT", "steps in the partition's TED"),
        Column("episodes", pa.int64(), "BIGINT", "episodes in the partition"),
        Column("bytes_on_disk", pa.int64(), "BIGINT", "bytes of the TED folder (hard links once)"),
        Column("data_version", pa.string(), "VARCHAR", "version of the TED (Dagster data version)"),
        Column("code_version", pa.string(), "VARCHAR", "code version of the TED asset"),
        Column("run_id", pa.string(), "VARCHAR", "Dagster run that wrote the rows"),
        Column("materialized_at", pa.timestamp("us", tz="UTC"), "TIMESTAMPTZ", "when"),
        Column("source_url", pa.string(), "VARCHAR", "where the source files were read"),
        Column(
            "fps",
            pa.float64(),
            "DOUBLE",
            "steps per second, the decoder's (LeRobot: info.json's fps) or the source's "
            "(NULL where neither knows it: OXE datasets missing from the table of rates); "
            "a control rate 1/dt may be fractional",
        ),
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
