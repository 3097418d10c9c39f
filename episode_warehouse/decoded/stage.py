"""The one shape of every source's decode stage: hold the raw folder still while it is read,
require its record, and rebuild the decoded folder when the raw version, the code version or the
decoded format changed. A source's ``stage.py`` calls :func:`decode_from_raw` with its reader."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from episode_warehouse.atomic import reading
from episode_warehouse.decoded.format import FORMAT_ID
from episode_warehouse.decoded.record import DecodedRecord
from episode_warehouse.incremental import Built, build_if_changed, checkout, require
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.records import RawRecord
from episode_warehouse.settings import Settings


def decoded_layout() -> str:
    """What decoded rows are laid out by: the format's version and how frames are stored
    (``EPISODE_WAREHOUSE_FRAMES``). An input of every decode stage (and of OpenX's per-shard
    fingerprints): changing either rebuilds."""
    return f"{FORMAT_ID}+frames={Settings.from_env().frames}"


def lineage(source: str, key: str, raw: RawRecord) -> dict:
    return {
        "source": source,
        "partition": key,
        "source_url": raw.source_url,
        "source_version": raw.version,
    }


def decode_from_raw[Raw: RawRecord](
    layout: WarehouseLayout,
    source: str,
    key: str,
    raw_asset: str,
    raw_type: type[Raw],
    code_version: str,
    make_build: Callable[[Path, Raw, dict], Callable[[Path], DecodedRecord]],
    fps: float | None = None,
) -> Built[DecodedRecord]:
    """The one shape of every decode stage: hold the raw folder still, require its record (a
    ``raw_type``), and rebuild the decoded folder when the raw version, the code version or
    ``fps`` changed. ``make_build(raw_dir, raw_record, lineage)`` returns the build function;
    ``fps``: a rate the user stated for the data (recorded in the decoded record, where the
    TED and every later stage read it)."""
    raw_dir = layout.raw_dir(source, key)
    # a bucket root: pull first; a pull swaps the folder, never under reading()
    checkout(layout.root, raw_dir, raw_type)
    with reading(raw_dir):
        raw = require(layout.root, raw_dir, raw_asset, key, raw_type, here=True)
        inputs = {"raw": raw.version, "code_version": code_version, "format": decoded_layout()}
        stated = {"fps": fps} if fps else {}
        return build_if_changed(
            layout.root,
            layout.decoded_dir(source, key),
            {**inputs, **stated},
            make_build(raw_dir, raw, {**lineage(source, key, raw), **stated}),
            record_type=DecodedRecord,
            upstream={raw_dir: raw.version},
        )
