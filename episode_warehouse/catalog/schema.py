"""The catalog's tables as typed Python data; Arrow schemas and view DDL are generated from it."""

from __future__ import annotations

import pyarrow as pa

from episode_warehouse.curation.findings import FINDING
from episode_warehouse.decoded.episode_table import EPISODE_COLUMNS, EPISODE_DATA
from episode_warehouse.tables import Column, Table

__all__ = [
    "CURATION_TABLES", "DUPLICATES", "EPISODE_DATA", "EPISODES", "JOINED", "PARTITIONS",
    "SCORES", "STATISTICS", "TABLES", "UNCHECKED", "Column", "Table",
]  # fmt: skip


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
        Column(
            "findings",
            pa.list_(FINDING),
            "STRUCT(kind VARCHAR, key VARCHAR, step BIGINT, steps BIGINT, detail VARCHAR)[]",
            "the integrity audit's findings: kind, TED key, first step within the episode, "
            "steps it spans, what was seen (see docs/curation.md)",
        ),
        Column("defects", pa.int64(), "BIGINT", "how many findings the audit made"),
        Column(
            "content_hash",
            pa.string(),
            "VARCHAR",
            "BLAKE2b-128 of the episode's stored steps (numeric leaves and frame bytes)",
        ),
        Column(
            "step_minhash",
            pa.list_(pa.int64()),
            "BIGINT[]",
            "MinHash (64 values) of the episode's step fingerprints: shared values estimate "
            "the share of steps two episodes have in common",
        ),
        Column(
            "frame_hashes",
            pa.list_(pa.int64()),
            "BIGINT[]",
            "64-bit perceptual hashes (DCT) of frames at 1/4, 1/2, 3/4 of the episode, per camera",
        ),
        Column(
            "sample_steps",
            pa.list_(pa.int64()),
            "BIGINT[]",
            "fingerprints of the (up to) 8 steps sampled by content: the smallest ones",
        ),
        Column(
            "sample_thumbs",
            pa.binary(),
            "BLOB",
            "8x8 grey thumbnails of each camera's decoded frame at the sample steps",
        ),
        Column("text_hash", pa.string(), "VARCHAR", "BLAKE2b-64 of the episode's texts, or NULL"),
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
        Column(
            "findings",
            pa.list_(FINDING),
            "STRUCT(kind VARCHAR, key VARCHAR, step BIGINT, steps BIGINT, detail VARCHAR)[]",
            "the integrity audit's findings about a dimension over the whole partition: "
            "constant, stuck, clipped (see docs/curation.md)",
        ),
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

# which episode a row of a curation table is about (the episodes view joins on these)
EPISODE_KEY = (
    Column("source", pa.string(), "VARCHAR", "source of the episode"),
    Column("partition", pa.string(), "VARCHAR", "partition key"),
    Column("episode", pa.int64(), "BIGINT", "episode id within the partition"),
)

DUPLICATES = Table(
    "duplicates",
    (
        *EPISODE_KEY,
        Column(
            "content_hash",
            pa.string(),
            "VARCHAR",
            "the episode's content_hash when it was checked (a changed episode's row is ignored)",
        ),
        Column(
            "near_duplicate_of",
            pa.string(),
            "VARCHAR",
            "'source/partition#episode' of the kept episode it resembles; NULL: checked, kept",
        ),
        Column(
            "duplicate_group",
            pa.string(),
            "VARCHAR",
            "the kept episode's name, for it and every episode dropped for it",
        ),
        Column("kept_source", pa.string(), "VARCHAR", "the kept episode's source"),
        Column("kept_partition", pa.string(), "VARCHAR", "the kept episode's partition"),
        Column("kept_episode", pa.int64(), "BIGINT", "the kept episode's id"),
        Column(
            "kept_hash",
            pa.string(),
            "VARCHAR",
            "the kept episode's content_hash when it was checked",
        ),
    ),
    "Every episode checked for duplicates (the episode_duplicates asset; see docs/curation.md):"
    " one artifact for the whole warehouse.",
    folder="duplicates",
)

SCORES = Table(
    "scores",
    (
        Column("score", pa.string(), "VARCHAR", "the score's name (a column score_<name>)"),
        Column("version", pa.string(), "VARCHAR", "the score function's version"),
        *EPISODE_KEY,
        Column(
            "content_hash",
            pa.string(),
            "VARCHAR",
            "the episode's content_hash when it was scored (a changed episode's is ignored)",
        ),
        Column("value", pa.float64(), "DOUBLE", "the score; NULL where it does not apply"),
        Column(
            "reason",
            pa.string(),
            "VARCHAR",
            "why the value is NULL, where the score function said (else NULL)",
        ),
    ),
    "Per-episode scores, one artifact per score and partition (the <source>_score_<name> "
    "assets; see docs/curation.md).",
    folder="scores",
    depth=3,
)

# Columns the episodes view adds to the rows: joined from duplicates (and one DOUBLE column
# score_<name> per score in the scores table)
UNCHECKED = "unchecked"  # near_duplicate_of of an episode not checked as it is now
JOINED = (
    Column("near_duplicate_of", pa.string(), "VARCHAR",
           "NULL: checked and kept; 'source/partition#episode': a kept episode it resembles "
           f"(dropped for it); '{UNCHECKED}': not checked as it is now (warehouse curate)"),
    Column("duplicate_group", pa.string(), "VARCHAR",
           "the kept episode's name, for it and every episode dropped for it (checked ones)"),
)  # fmt: skip

TABLES = (EPISODES, PARTITIONS, STATISTICS)  # per partition, with schema-only rows when empty
CURATION_TABLES = (DUPLICATES, SCORES)
ROWS_FORMAT = f"{EPISODES.format_id}+{PARTITIONS.format_id}"  # the catalog rows stage's format


def schema_markdown() -> str:
    """The tables as Markdown (docs/catalog.md embeds this; a test keeps them in sync)."""
    joined = "\n".join(f"| `{c.name}` | {c.sql} | {c.doc} |" for c in JOINED)
    view = (
        "The `episodes` view is `episode_rows` (the files above) with the curation columns "
        "joined:\n\n| column | type | meaning |\n|---|---|---|\n" + joined + "\n"
        "| `score_<name>` | DOUBLE | each score in the `scores` table, by name |"
    )
    return "\n\n".join([*(t.markdown() for t in (*TABLES, *CURATION_TABLES)), view])
