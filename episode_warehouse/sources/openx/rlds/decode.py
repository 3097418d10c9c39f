"""Decode the shards of one RLDS dataset into a decoded-episodes folder, one episode at a time.

Shards are read in split order, then shard order (``dataset_info.json``'s), each from its mirrored
copy or from the bucket itself (streaming). A shard may be GZIP-compressed (sniffed; TFDS writes
plain ones). Each record is one episode (``episode.EpisodeRecord``); its step columns are decoded
and appended one at a time (``episode_sink``), so memory holds one record and one column.

Text per step: the language instruction (``language_instruction``, or RT-1's
``observation/natural_language_instruction``, whichever the dataset has, in that order) becomes
``task_index`` and the episode's ``language_instruction`` (its first step's); any other text leaf
becomes an int64 index into its own list, kept in meta.json under ``texts``. Episode leaves
(``episode_metadata/*``, ``episode_id`` ...) become the ``episode_metadata`` JSON column.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from episode_warehouse.decoded import DecodedEpisodes
from episode_warehouse.decoded.format import CHW, DEPTH
from episode_warehouse.decoded.record import DecodedRecord
from episode_warehouse.errors import CorruptInputError
from episode_warehouse.frames.camera_rows import CameraRows
from episode_warehouse.incremental import fingerprint
from episode_warehouse.limits import InputLimits
from episode_warehouse.progress import progress
from episode_warehouse.sources.openx.episode_sink import EpisodeRow, EpisodeSink
from episode_warehouse.sources.openx.rlds.dataset_info import ShardFile
from episode_warehouse.sources.openx.rlds.episode import EpisodeRecord
from episode_warehouse.sources.openx.rlds.features import RldsFeatures
from episode_warehouse.sources.source_file import SourceFile
from episode_warehouse.tfrecord.records import iter_gzip_records, iter_records
from episode_warehouse.threads import compute_threads

log = logging.getLogger(__name__)
INSTRUCTION_PATHS = ("language_instruction", "observation/natural_language_instruction")
_GZIP_MAGIC = b"\x1f\x8b"


@dataclass(frozen=True)
class RldsShard:
    """One shard to decode: what dataset_info.json says of it, where to read it, and the
    version of its bytes as listed (size, generation, crc32c: a changed shard gets a new one)."""

    info: ShardFile
    file: SourceFile
    version: str = ""


def instruction_leaf(features: RldsFeatures) -> str | None:
    """The path of the step leaf that holds the language instruction, if any."""
    return next((p for p in INSTRUCTION_PATHS if features.step(p) is not None), None)


def _records(fh, name: str, limits: InputLimits) -> Iterator[tuple[int, bytes]]:
    head = fh.peek(2)[:2] if hasattr(fh, "peek") else b""
    reader = iter_gzip_records if head == _GZIP_MAGIC else iter_records
    return reader(fh, name, max_record_bytes=limits.max_record_bytes)


def _columns(
    record: EpisodeRecord, sink: EpisodeSink, instruction: str | None, row: EpisodeRow
) -> Iterator[tuple[str, np.ndarray | CameraRows]]:
    """The episode's step columns, decoded as they are taken; sets ``row.instruction``."""
    for leaf in record.features.steps:
        if leaf.kind == "text" or leaf.dtype == "string":
            values = record.texts(leaf)
            where = record.subject  # the shard and the record's byte offset
            if leaf.path == instruction:
                row.instruction = values[0]
                yield "task_index", sink.task_index(values, where)
            else:
                yield leaf.path, sink.text_index(leaf.path, values, where)
        else:
            yield leaf.path, record.column(leaf)


def cameras_of(features: RldsFeatures) -> dict[str, str]:
    """The cameras features.json declares (``Image`` features): 8-bit ones as ``CHW``, uint16
    and float32 ones as ``DEPTH``."""
    return {
        leaf.path: CHW if leaf.dtype == "uint8" else DEPTH
        for leaf in features.steps
        if leaf.kind == "image"
    }


def decode_rlds(
    shards: list[RldsShard],
    features: RldsFeatures,
    staging: Path,
    *,
    dataset_version: str,
    lineage: dict | None = None,
    limits: InputLimits | None = None,
    previous: DecodedEpisodes | None = None,
    salt: str = "",
) -> DecodedRecord:
    """Decode every episode of ``shards`` (in order) into ``staging``; return meta.json.

    A shard whose fingerprint (its ``version``, ``salt`` and the dataset version) is one the
    ``previous`` build holds is copied from there, not decoded (``episode_sink``); ``salt``
    names everything else the decoded rows depend on (features, code and format versions).

    Raises:
        CorruptInputError: a bad shard, record or episode (named, with the record's byte
            offset), a shard holding another number of episodes than dataset_info.json says,
            or no episode at all.
        LimitExceededError: an episode over the input limits (named).
    """
    limits = limits or InputLimits()
    instruction = instruction_leaf(features)
    warned: set[str] = set()
    total = sum(s.info.episodes for s in shards)
    with (
        ThreadPoolExecutor(compute_threads(4), thread_name_prefix="image-decode") as pool,
        progress("decoding episodes", total, "episodes") as bar,
        EpisodeSink(staging, previous, limits=limits) as sink,
    ):
        for shard in shards:
            name = shard.info.name
            if sink.shard(name, fingerprint(shard.version, salt, dataset_version)):
                bar.update(shard.info.episodes)
                continue
            count = 0
            with shard.file.open() as fh:
                for offset, data in _records(fh, name, limits):
                    subject = f"{name} record at byte {offset}"
                    record = EpisodeRecord(data, features, subject, limits=limits, pool=pool)
                    extra = set(record.undeclared()) - warned
                    if extra:
                        log.warning("%s: features not in features.json, not read: %s", name, extra)
                        warned |= extra
                    row = EpisodeRow(
                        source=name,
                        split=shard.info.split,
                        dataset_version=dataset_version,
                        metadata=record.metadata(),
                    )
                    columns = _columns(record, sink, instruction, row)
                    sink.add(subject, record.length, columns, row)
                    count += 1
                    bar.update()
            if count != shard.info.episodes:
                raise CorruptInputError(
                    f"the shard holds {count} episodes, dataset_info.json says "
                    f"{shard.info.episodes}",
                    subject=name,
                    fix="the shard is cut or another version's; mirror the dataset again",
                )
        meta = sink.finish(
            {
                "dataset_version": dataset_version,
                "images": cameras_of(features),
                **(lineage or {}),
            },  # fmt: skip
            subject=", ".join(s.info.name for s in shards) or "(no shards)",
            fix="check the version folder and its dataset_info.json",
        )
    return meta
