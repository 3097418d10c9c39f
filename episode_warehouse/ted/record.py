"""The TED's record: what ``ted/<source>/<partition>/meta.json`` holds."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from episode_warehouse.records import FormatRecord


@dataclass(frozen=True, kw_only=True)
class TedRecord(FormatRecord):
    """Written by :func:`~episode_warehouse.ted.builder.build_ted`: the layout of every key
    (``keys``: ``"next/reward"`` -> file, kind, see :mod:`episode_warehouse.ted.layout`), the
    counts, and the lineage and lookup tables carried from the decoded record (a source's own,
    such as Atari's ``suffixes`` and ``gaps`` or OpenX's ``texts``, stay in ``extra``)."""

    FORMAT: ClassVar[str] = "episode-warehouse-ted"
    # 3: RL Unplugged rows are all steps; one Atari schema. 4: a source's final observations
    # (final/<key>.npy, one row per episode) are what ("next", key) reads on last steps.
    # 5: cameras may be stored encoded (a key's "frames": <key>.frames + <key>.offsets.npy)
    FORMAT_VERSION: ClassVar[int] = 5
    rows: int
    episodes: int
    keys: dict[str, dict]
    source: str = ""
    partition: str = ""
    source_url: str = ""
    source_version: str = ""
    tasks: list[str] = field(default_factory=list)
    fps: float | None = None
    robot_type: str | None = None
