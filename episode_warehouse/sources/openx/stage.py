"""The decoded stage of one OpenX dataset."""

from __future__ import annotations

from pathlib import Path

from episode_warehouse.decoded.stage import decode_from_raw
from episode_warehouse.incremental import Built
from episode_warehouse.limits import InputLimits
from episode_warehouse.paths import WarehouseLayout


def decode_openx(
    layout: WarehouseLayout, key: str, *, code_version: str, limits: InputLimits | None = None
) -> Built:
    """Decoded episodes of one OpenX dataset, from its mirrored shards or the source itself."""
    from episode_warehouse.sources.openx.decode import decode_shards
    from episode_warehouse.sources.openx.mirror import manifest_shards

    def make_build(raw_dir: Path, raw: dict, lineage: dict):
        return lambda tmp: decode_shards(
            manifest_shards(raw_dir, raw), tmp, lineage=lineage, limits=limits
        )

    return decode_from_raw(layout, "openx", key, "openx_shards", code_version, make_build)
