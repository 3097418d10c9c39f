"""Mirror the tar shards of one OpenX dataset under the warehouse root, incrementally.

Shards are copied with fsspec (local paths and ``hf://`` URLs alike) to a ``.part`` file,
verified (crc32c for local sources, sha256 for hub LFS files) and renamed into place; a shard
whose manifest entry already matches the source's version is not copied again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path

import fsspec

from episode_warehouse.blobstore import PART_SUFFIX, file_crc32c
from episode_warehouse.errors import CorruptInputError
from episode_warehouse.openx.shards import Shard, ShardListing

log = logging.getLogger(__name__)
MANIFEST = "manifest.json"


def _digest(path: Path, version: str) -> str:
    if len(version) == 64:  # hub LFS sha256
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            while chunk := fh.read(8 << 20):
                h.update(chunk)
        return h.hexdigest()
    return file_crc32c(path)


def listing_version(shards: list[Shard], revision: str) -> str:
    text = json.dumps([revision] + [[s.name, s.size, s.version] for s in shards])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def mirror_shards(listing: ShardListing, dest: Path, source_url: str) -> dict:
    """Copy the shards of ``listing`` into ``dest``; return the manifest written there."""
    dest.mkdir(parents=True, exist_ok=True)
    old = (
        json.loads((dest / MANIFEST).read_text()).get("shards", {})
        if (dest / MANIFEST).is_file()
        else {}
    )
    copied = 0
    for i, shard in enumerate(listing.shards, 1):
        target = dest / shard.name
        if target.is_file() and old.get(shard.name, {}).get("version") == shard.version:
            continue
        part = target.with_name(target.name + PART_SUFFIX)
        with fsspec.open(shard.location, "rb") as src, open(part, "wb") as out:
            while chunk := src.read(8 << 20):
                out.write(chunk)
        if part.stat().st_size != shard.size or _digest(part, shard.version) != shard.version:
            part.unlink()
            raise CorruptInputError(
                "the copied shard does not match the source's size/hash",
                subject=shard.location,
                fix="retry; the source changed while it was copied or the transfer was corrupted",
            )
        os.replace(part, target)
        copied += 1
        log.info(
            "mirrored %s (%d/%d, %.1f MB)", shard.name, i, len(listing.shards), shard.size / 1e6
        )
    for path in dest.glob("*.tar"):
        if path.name not in {s.name for s in listing.shards}:
            path.unlink()
    manifest = {
        "source_url": source_url,
        "revision": listing.revision,
        "shards": {s.name: s.to_json() for s in listing.shards},
        "source_version": listing_version(listing.shards, listing.revision),
        "mode": "download",
        "copied": copied,
    }
    tmp = dest / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=1, sort_keys=True))
    os.replace(tmp, dest / MANIFEST)
    return manifest


def record_listing(listing: ShardListing, dest: Path, source_url: str) -> dict:
    """Streaming mode: publish the manifest of the source's shards without copying them."""
    dest.mkdir(parents=True, exist_ok=True)
    for path in dest.glob("*.tar"):
        path.unlink()
    manifest = {
        "source_url": source_url,
        "revision": listing.revision,
        "mode": "streaming",
        "shards": {s.name: s.to_json() for s in listing.shards},
        "source_version": listing_version(listing.shards, listing.revision),
        "copied": 0,
    }
    tmp = dest / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=1, sort_keys=True))
    os.replace(tmp, dest / MANIFEST)
    return manifest


def read_manifest(dest: Path) -> dict:
    """The published manifest of a raw folder, or {} when there is none."""
    path = dest / MANIFEST
    return json.loads(path.read_text()) if path.is_file() else {}


def manifest_shards(dest: Path, manifest: dict) -> list[Shard]:
    """The shards a manifest names: the local copies, or the source itself in streaming mode."""
    streaming = manifest.get("mode") == "streaming"
    return [
        Shard(name, e["location"] if streaming else str(dest / name), e["size"], e["version"])
        for name, e in sorted(manifest["shards"].items())
    ]
