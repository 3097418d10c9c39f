"""The raw stage of one OpenX dataset: its tar shards mirrored, or only listed (streaming).

The raw folder (``<root>/raw/openx/<dataset>/``) is one artifact of the incremental rule: its
inputs are the source's listing (shard names, sizes and versions: hub LFS sha256, or a local
file's size and mtime) and the mode. In ``download`` mode a new version is built aside: shards
whose version did not change are hard-linked from the published version, the others are copied
with fsspec (local paths and ``hf://`` URLs alike; bounded retries on transient failures) and
verified while they are copied (sha256 against the hub's LFS hash; size and an unchanged
source for local files). In ``streaming`` mode the record only lists the source's shards.
"""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path

import google_crc32c

from episode_warehouse.atomic import link_or_copy
from episode_warehouse.blobstore import PART_SUFFIX, crc32c_b64
from episode_warehouse.errors import ConfigError, SourceUnreachableError
from episode_warehouse.incremental import Built, build_if_changed, published
from episode_warehouse.retry import RetryPolicy, call_with_retries
from episode_warehouse.sources.openx.record import ShardsRawRecord
from episode_warehouse.sources.openx.shards import Shard, ShardListing, local_version, open_shard
from episode_warehouse.storage import Root

log = logging.getLogger(__name__)
MODES = ("download", "streaming")


def _copy(shard: Shard, part: Path, policy: RetryPolicy) -> str:
    """Copy one shard to ``part``, verifying it on the way; returns its crc32c."""

    def attempt() -> str:
        crc = google_crc32c.Checksum()
        sha = hashlib.sha256() if len(shard.version) == 64 else None
        size = 0
        with open_shard(shard.location, policy) as src, open(part, "wb") as out:
            while chunk := src.read(8 << 20):
                crc.update(chunk)
                if sha is not None:
                    sha.update(chunk)
                out.write(chunk)
                size += len(chunk)
        if size != shard.size or (sha is not None and sha.hexdigest() != shard.version):
            part.unlink(missing_ok=True)
            raise SourceUnreachableError(
                f"the copy has {size} bytes{' and another sha256' if sha else ''}, the source "
                f"listed {shard.size}",
                subject=shard.location,
                fix="retry; the source changed while it was copied or the transfer broke",
            )
        if sha is None and local_version(Path(shard.location)) != shard.version:
            part.unlink(missing_ok=True)
            raise SourceUnreachableError(
                "the shard changed while it was copied",
                subject=shard.location,
                fix="retry once the file is no longer being written",
            )
        return crc32c_b64(crc)

    return call_with_retries(attempt, policy=policy, subject=shard.location)


def mirror_shards(
    listing: ShardListing,
    target: Path,
    source_url: str,
    *,
    root: Root,
    mode: str,
    code_version: str,
    policy: RetryPolicy | None = None,
) -> Built[ShardsRawRecord]:
    """Publish the raw folder of one dataset: shards copied (``download``) or listed.

    Raises:
        SourceUnreachableError: a shard kept failing to copy intact (size or hash differ).
    """
    policy = policy or RetryPolicy()
    inputs = {
        "source_url": source_url,
        "revision": listing.revision,
        "mode": mode,
        "shards": {s.name: s.to_json() for s in listing.shards},
        "code_version": code_version,
        "format": "openx-raw/v1",  # the record's format: a new one rebuilds the folder
    }

    def build(staging: Path) -> ShardsRawRecord:
        files: dict[str, dict] = {}
        copied = 0
        if mode == "download":
            record = published(root, target, ShardsRawRecord)
            old = record.files if record is not None else {}
            for i, shard in enumerate(listing.shards, 1):
                dest = staging / shard.name
                entry = old.get(shard.name, {})
                if entry.get("version") == shard.version and (target / shard.name).is_file():
                    link_or_copy(target / shard.name, dest)
                    files[shard.name] = entry
                    continue
                part = dest.with_name(dest.name + PART_SUFFIX)
                crc = _copy(shard, part, policy)
                os.replace(part, dest)
                files[shard.name] = {"size": shard.size, "version": shard.version, "crc32c": crc}
                copied += 1
                log.info(
                    "mirrored %s (%d/%d, %.1f MB)",
                    shard.name,
                    i,
                    len(listing.shards),
                    shard.size / 1e6,
                )
        return ShardsRawRecord(
            format="openx-raw",
            source_url=source_url,
            revision=listing.revision,
            mode=mode,
            shards={s.name: s.to_json() for s in listing.shards},
            files=files,
            copied=copied,
        )

    if mode not in MODES:
        raise ConfigError(
            f"unknown mode {mode!r}", subject="OPENX_MODE", fix="use 'download' or 'streaming'"
        )
    return build_if_changed(root, target, inputs, build, record_type=ShardsRawRecord)


def manifest_shards(folder: Path, record: ShardsRawRecord) -> list[Shard]:
    """The shards a raw record names: the local copies, or the source itself in streaming mode."""
    streaming = record.mode == "streaming"
    return [
        Shard(name, e["location"] if streaming else str(folder / name), e["size"], e["version"])
        for name, e in sorted(record.shards.items())
    ]
