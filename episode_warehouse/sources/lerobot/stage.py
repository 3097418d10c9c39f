"""The decoded stage of one LeRobot dataset."""

from __future__ import annotations

from pathlib import Path

from episode_warehouse.decoded.record import DecodedRecord
from episode_warehouse.decoded.stage import decode_from_raw
from episode_warehouse.errors import CorruptInputError
from episode_warehouse.incremental import Built
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.records import RawRecord


def decode_lerobot_stage(
    layout: WarehouseLayout, key: str, *, code_version: str
) -> Built[DecodedRecord]:
    """Decoded episodes of one LeRobot dataset, from its mirrored folder."""
    from episode_warehouse.sources.lerobot.dataset import open_lerobot_folder
    from episode_warehouse.sources.lerobot.decode import decode_lerobot

    def make_build(raw_dir: Path, raw: RawRecord, lineage: dict):
        def build(tmp: Path) -> DecodedRecord:
            try:
                return decode_lerobot(open_lerobot_folder(raw_dir), tmp, lineage=lineage)
            except CorruptInputError as exc:
                raise _at_source(exc, raw_dir, raw.source_url) from exc

        return build

    return decode_from_raw(
        layout, "lerobot", key, "lerobot_files", RawRecord, code_version, make_build
    )


def _at_source(exc: CorruptInputError, raw_dir: Path, source_url: str) -> CorruptInputError:
    """The error naming the source's file (``hf://datasets/lab/x@<sha>/meta/info.json``, the
    user's folder), not the warehouse's copy of it, which the user never wrote."""
    subject = exc.subject or ""
    copy = str(raw_dir)
    if not source_url or not subject.startswith(copy):
        return exc
    named = source_url.rstrip("/") + subject[len(copy) :]
    return type(exc)(exc.what, subject=f"{named} (the warehouse's copy: {subject})", fix=exc.fix)
