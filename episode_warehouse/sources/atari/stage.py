"""The decoded stage of one Atari run, in the layout its raw stage found (Dopamine
checkpoints or RL Unplugged TFRecords)."""

from __future__ import annotations

from pathlib import Path

from episode_warehouse.decoded.record import DecodedRecord
from episode_warehouse.decoded.stage import decode_from_raw
from episode_warehouse.incremental import Built
from episode_warehouse.limits import InputLimits
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.sources.atari.record import RLU_FORMAT, AtariRawRecord


def decode_atari(
    layout: WarehouseLayout,
    key: str,
    *,
    code_version: str,
    workers: int,
    endpoint: str | None = None,
    limits: InputLimits | None = None,
) -> Built[DecodedRecord]:
    """Decoded episodes of one Atari run from its raw folder (held still while it is read),
    in the layout the raw stage found: Dopamine checkpoints or RL Unplugged TFRecord files
    (``endpoint`` reaches the bucket when the raw stage only listed them: streaming)."""

    def make_build(raw_dir: Path, raw: AtariRawRecord, lineage: dict):
        if raw.format == RLU_FORMAT:
            return _rlu_build(raw_dir, raw, key, workers, endpoint, limits, lineage)
        from episode_warehouse.sources.atari.decode import decode_run

        def build(tmp: Path) -> DecodedRecord:
            return decode_run(
                raw_dir / "replay_logs",
                raw.suffixes,
                tmp,
                workers=workers,
                file_prefix=f"{key}/replay_logs/",
                lineage=lineage,
            )

        return build

    return decode_from_raw(
        layout, "atari", key, "atari_replay_files", AtariRawRecord, code_version, make_build
    )


def _rlu_build(raw_dir: Path, raw: AtariRawRecord, key, workers, endpoint, limits, lineage):
    from episode_warehouse.sources.atari.rlu_decode import decode_rlu_run
    from episode_warehouse.sources.source_file import SourceFile

    names = sorted(raw.files)
    if raw.mode == "streaming":
        sources = [
            SourceFile(
                name,
                store_url=raw.store_url,
                endpoint=endpoint,
                blob=raw.blobs[name],
                size=raw.files[name]["size"],
                generation=raw.files[name]["generation"],
            )
            for name in names
        ]
    else:
        sources = [SourceFile(name, path=str(raw_dir / "rlu" / name)) for name in names]
    max_record = (limits or InputLimits()).max_record_bytes

    def build(tmp: Path) -> DecodedRecord:
        return decode_rlu_run(
            sources,
            tmp,
            workers=workers,
            file_prefix=f"{key.split('/')[0]}/",
            lineage=lineage,
            max_record_bytes=max_record,
        )

    return build
