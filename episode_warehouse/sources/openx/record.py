"""An OpenX dataset's raw record: WebDataset shards or an RLDS dataset version."""

from __future__ import annotations

from dataclasses import dataclass

from episode_warehouse.records import RawRecord


@dataclass(frozen=True, kw_only=True)
class ShardsRawRecord(RawRecord):
    """WebDataset tars: ``shards``: name -> location, size, version (what the listing gave);
    ``copied``: how many this build downloaded."""

    shards: dict[str, dict]
    copied: int = 0


@dataclass(frozen=True, kw_only=True)
class RldsRawRecord(RawRecord):
    """An RLDS version folder: its ``features.json`` and ``dataset_info.json`` as published
    (parsed by the decoder), and each TFRecord shard's listing entry and object name."""

    layout: str  # "rlds"
    store_url: str
    dataset: str
    dataset_version: str  # the dataset's version folder ("version" is the artifact's own)
    features: dict
    dataset_info: dict
    shards: dict[str, dict]
    copied: int = 0


def openx_raw_record(raw: RawRecord, subject: str) -> ShardsRawRecord | RldsRawRecord:
    """``raw`` (read as the common part) as its layout's record.

    Raises:
        CorruptInputError: a field of that layout missing or of another type.
    """
    kind = RldsRawRecord if raw.extra.get("layout") == "rlds" else ShardsRawRecord
    return kind.from_json(raw.to_json(), subject=subject)
