"""An Atari run's raw record, in either layout."""

from __future__ import annotations

from dataclasses import dataclass, field

from episode_warehouse.records import RawRecord

DOPAMINE_FORMAT = "atari-dopamine-raw"
RLU_FORMAT = "atari-rlu-raw"


@dataclass(frozen=True, kw_only=True)
class AtariRawRecord(RawRecord):
    """``format``: :data:`DOPAMINE_FORMAT` or :data:`RLU_FORMAT`; ``suffixes``: the chosen
    checkpoints (Dopamine suffixes, RL Unplugged file indices); ``blobs``: file name -> object
    name in the store at ``store_url`` (what streaming reads)."""

    layout: str  # "dopamine" or "rlu"
    store_url: str
    subset: str  # the checkpoint subset as set (ATARI_CHECKPOINTS)
    suffixes: list[int]
    blobs: dict[str, str] = field(default_factory=dict)
