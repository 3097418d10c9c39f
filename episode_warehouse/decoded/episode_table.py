"""The per-episode table every decoder writes (decoded and TED ``episodes.parquet``): the
catalog's ``episodes`` columns less the partition and the lineage."""

from __future__ import annotations

import pyarrow as pa

from episode_warehouse.tables import Column, Table

EPISODE_COLUMNS = (
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
    Column("split", pa.string(), "VARCHAR", "OpenX RLDS: the published split (train, val, test)"),
    Column(
        "dataset_version",
        pa.string(),
        "VARCHAR",
        "OpenX RLDS: the dataset's version folder that was read (e.g. 0.1.0)",
    ),
    Column(
        "episode_metadata",
        pa.string(),
        "JSON",
        "OpenX RLDS: the episode's own leaves by path, e.g. "
        "episode_metadata->>'$.\"episode_metadata/file_path\"'",
    ),
)

# What a decoder writes per episode (decoded and TED ``episodes.parquet``).
EPISODE_DATA = Table("episode_data", EPISODE_COLUMNS, "Per-episode columns of one partition.")
