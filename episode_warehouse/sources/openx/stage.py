"""The decoded stage of one OpenX dataset, in the layout its raw stage found."""

from __future__ import annotations

from pathlib import Path

from episode_warehouse.decoded import open_previous
from episode_warehouse.decoded.record import DecodedRecord
from episode_warehouse.decoded.stage import decode_from_raw, decoded_layout
from episode_warehouse.incremental import Built, fingerprint
from episode_warehouse.limits import InputLimits
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.records import RECORD, RawRecord
from episode_warehouse.sources.openx.record import RldsRawRecord, openx_raw_record
from episode_warehouse.ted.dataset_parts import check_fits


def decode_openx(
    layout: WarehouseLayout,
    key: str,
    *,
    code_version: str,
    limits: InputLimits | None = None,
    endpoint: str | None = None,
    fps: float | None = None,
) -> Built[DecodedRecord]:
    """Decoded episodes of one OpenX dataset, from its mirrored shards or the source itself
    (``endpoint`` reaches the bucket when the raw stage only listed them: streaming). Shards
    unchanged since the published build are copied from it, not decoded again. ``fps``: the
    dataset's rate where the user stated it (``OPENX_CONTROL_HZ``), else the table's, if any."""

    check_fits(layout.root, "openx", key)  # a part of the dataset published meanwhile
    target = layout.decoded_dir("openx", key)
    salt = fingerprint(code_version, decoded_layout())  # what else decoded rows depend on

    def make_build(raw_dir: Path, common: RawRecord, lineage: dict):
        # the previous build is opened when the build runs (under the stage's writer lock)
        raw = openx_raw_record(common, str(raw_dir / RECORD))
        if isinstance(raw, RldsRawRecord):
            from episode_warehouse.sources.openx.rlds.decode import decode_rlds
            from episode_warehouse.sources.openx.rlds.features import parse_features
            from episode_warehouse.sources.openx.rlds.mirror import recorded_shards

            shards = recorded_shards(raw_dir, raw, endpoint)
            features = parse_features(raw.features, f"{raw.source_url}/features.json")
            return lambda tmp: decode_rlds(
                shards,
                features,
                tmp,
                dataset_version=raw.dataset_version,
                lineage=lineage,
                limits=limits,
                previous=open_previous(target),
                salt=fingerprint(salt, raw.features),
            )
        from episode_warehouse.sources.openx.decode import decode_shards
        from episode_warehouse.sources.openx.mirror import manifest_shards

        return lambda tmp: decode_shards(
            manifest_shards(raw_dir, raw),
            tmp,
            lineage=lineage,
            limits=limits,
            previous=open_previous(target),
            salt=salt,
        )

    return decode_from_raw(
        layout, "openx", key, "openx_shards", RawRecord, code_version, make_build, fps=fps
    )
