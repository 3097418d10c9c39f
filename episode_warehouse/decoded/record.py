"""The decoded stage's record: what ``decoded/<source>/<partition>/meta.json`` holds."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from episode_warehouse.records import FormatRecord


@dataclass(frozen=True, kw_only=True)
class DecodedRecord(FormatRecord):
    """Written by :class:`~episode_warehouse.decoded.writer.EpisodeWriter` (``format`` to
    ``arrays``) and the source's decoder (lineage, tasks, fps, robot type; a source's own fields,
    such as Atari's checkpoint ``suffixes`` or OpenX's per-shard fingerprints, stay in
    ``extra``)."""

    FORMAT: ClassVar[str] = "episode-warehouse-decoded"
    # 3: RL Unplugged rows are all steps, no "final" role. 4: cameras may be stored encoded
    # (an array's "encoding": "frames")
    FORMAT_VERSION: ClassVar[int] = 4
    rows: int
    episodes: int
    arrays: dict[str, dict]  # key -> ArraySpec.to_json() (shape, dtype, role)
    source: str = ""
    partition: str = ""
    source_url: str = ""
    source_version: str = ""  # the raw record's version
    tasks: list[str] = field(default_factory=list)  # task_index -> instruction
    fps: float | None = None
    robot_type: str | None = None
