"""A LeRobot export's record: ``meta/warehouse_export.json`` beside lerobot's own files."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from episode_warehouse.records import EXPORT_RECORD, Record


@dataclass(frozen=True, kw_only=True)
class ExportRecord(Record):
    """What was exported: the request (mode, query), its episodes (source, partition, episode,
    start, length) and the frames written."""

    FILE: ClassVar[str] = EXPORT_RECORD
    name: str
    frames: int
    episodes: int
    request: dict
    episode_list: list[list]
