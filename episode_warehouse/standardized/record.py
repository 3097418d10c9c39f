"""The standardized partition's record: ``standardized/<source>/<partition>/meta.json``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from episode_warehouse.records import FormatRecord


@dataclass(frozen=True, kw_only=True)
class StandardizedRecord(FormatRecord):
    """Counts, shapes and names of one standardized partition.

    ``views``: view (``primary``, ``secondary``, ``wrist``) -> the TED file of its frames (the
    TED of version ``inputs["ted"]``, rows ``ted_row.npy``; ``null`` for a view the dataset
    lacks); ``image_shapes``: view -> ``[C, H, W]``.
    ``instructions`` is the lookup table of ``instruction.npy``. ``action_mask`` marks the
    dimensions normalization applies to (Octo's: not the gripper).
    """

    FORMAT: ClassVar[str] = "episode-warehouse-standardized"
    # 2: views name the TED's frame files (1: hard links in images/)
    FORMAT_VERSION: ClassVar[int] = 2
    source: str
    partition: str
    dataset: str  # the name its statistics and batches carry
    rows: int
    episodes: int
    action_dim: int
    state_dim: int  # 0: no state
    views: dict[str, str | None]
    image_shapes: dict[str, list[int]]
    instructions: list[str]
    action_mask: list[bool]
    action_encoding: str
    proprio_encoding: str
    fps: float | None = None
    robot_type: str | None = None
    dropped_episodes: int = 0  # episodes the transform left no step of
    mapping: dict = field(default_factory=dict)  # a LeRobot partition's declared mapping
