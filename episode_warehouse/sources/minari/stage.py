"""The decoded stage of one Minari dataset."""

from __future__ import annotations

from pathlib import Path

from episode_warehouse.decoded.record import DecodedRecord
from episode_warehouse.decoded.stage import decode_from_raw
from episode_warehouse.incremental import Built
from episode_warehouse.limits import InputLimits
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.records import RawRecord


def decode_minari_stage(
    layout: WarehouseLayout, key: str, *, code_version: str, limits: InputLimits | None = None
) -> Built[DecodedRecord]:
    """Decoded episodes of one Minari dataset, from its mirrored folder."""
    from episode_warehouse.sources.minari.decode import decode_minari

    def make_build(raw_dir: Path, raw: RawRecord, lineage: dict):
        return lambda tmp: decode_minari(raw_dir, tmp, lineage=lineage, limits=limits)

    return decode_from_raw(
        layout, "minari", key, "minari_files", RawRecord, code_version, make_build
    )
