"""The records of a partition's catalog files: its rows and its statistics."""

from __future__ import annotations

from dataclasses import dataclass

from episode_warehouse.records import Record


@dataclass(frozen=True, kw_only=True)
class RowsRecord(Record):
    """``catalog/rows/<source>/<partition>/meta.json``: its episodes and partitions rows (the
    schema-only ``_empty`` set has neither count)."""

    episodes: int = 0
    frames: int = 0


@dataclass(frozen=True, kw_only=True)
class StatisticsRecord(Record):
    """``catalog/statistics/<source>/<partition>/meta.json``: which keys, how many rows."""

    keys: list[str]
    rows: int


@dataclass(frozen=True, kw_only=True)
class DuplicatesRecord(Record):
    """``catalog/duplicates/warehouse/all/meta.json``: episodes checked, those dropped (each
    for a kept one it resembles), and the groups (kept episodes something was dropped for)."""

    episodes: int = 0
    dropped: int = 0
    groups: int = 0


@dataclass(frozen=True, kw_only=True)
class ScoresRecord(Record):
    """``catalog/scores/<score>/<source>/<partition>/meta.json``: episodes, those scored."""

    episodes: int = 0
    scored: int = 0
