"""The raw stage of one RLDS dataset: its version folder's shards mirrored, or only listed.

The raw folder (``<root>/raw/openx/<dataset>/``) is one artifact of the incremental rule: its
inputs are the chosen version, the listing of its shards (size, generation, crc32c), the mode and
the code version. ``download`` mirrors through the shared blob-store mirror (unchanged shards
are hard-linked from the published version, so a new version of a 2,048-shard dataset fetches
only the shards that changed); ``streaming`` records the listing and the decoder reads the
bucket. Either way the record holds ``features.json`` and ``dataset_info.json`` themselves, so
the decoder never reads them from the source again.
"""

from __future__ import annotations

from pathlib import Path

from episode_warehouse.blobstore import BlobStore
from episode_warehouse.errors import ConfigError
from episode_warehouse.incremental import Built, build_if_changed, fingerprint
from episode_warehouse.sources.mirror import MirrorReport, mirror_files
from episode_warehouse.sources.openx.mirror import MODES
from episode_warehouse.sources.openx.record import RldsRawRecord
from episode_warehouse.sources.openx.rlds.dataset_info import parse_dataset_info
from episode_warehouse.sources.openx.rlds.decode import RldsShard
from episode_warehouse.sources.openx.rlds.listing import DATASET_INFO, RldsListing
from episode_warehouse.sources.source_file import SourceFile
from episode_warehouse.storage import Root

RECORD_FORMAT = "openx-rlds-raw"
SHARDS_DIR = "rlds"


def mirror_rlds(
    store: BlobStore,
    listing: RldsListing,
    target: Path,
    *,
    root: Root,
    mode: str,
    code_version: str,
    workers: int = 4,
) -> tuple[Built[RldsRawRecord], MirrorReport]:
    """Publish the raw folder of one RLDS dataset version: shards copied, or listed.

    Raises:
        ConfigError: an unknown mode.
        SourceUnreachableError: a shard kept failing to download intact.
    """
    if mode not in MODES:
        raise ConfigError(
            f"unknown mode {mode!r}", subject="OPENX_MODE", fix="use download or streaming"
        )
    source_url = f"{store.url}/{listing.dataset}/{listing.version}"
    inputs = {
        "source_url": source_url,
        "layout": "rlds",
        "dataset_version": listing.version,
        "mode": mode,
        "files": {name: blob.to_json() for name, blob in listing.shards.items()},
        "code_version": code_version,
        "format": f"{RECORD_FORMAT}/v1",  # the record's format: a new one rebuilds the folder
    }
    report = MirrorReport()

    def build(staging: Path) -> RldsRawRecord:
        files: dict[str, dict] = {}
        if mode == "download":
            files = mirror_files(
                store,
                listing.shards,
                target,
                staging,
                report,
                root=root,
                subdir=SHARDS_DIR,
                workers=workers,
            )
        return RldsRawRecord(
            format=RECORD_FORMAT,
            layout="rlds",
            source_url=source_url,
            store_url=store.url,
            dataset=listing.dataset,
            dataset_version=listing.version,
            revision=listing.version,
            mode=mode,
            features=listing.features_doc,
            dataset_info=listing.dataset_info_doc,
            shards={
                name: {**blob.to_json(), "blob": blob.name} for name, blob in listing.shards.items()
            },
            files=files,
            copied=len(report.downloaded),
        )

    built = build_if_changed(root, target, inputs, build, record_type=RldsRawRecord)
    return built, report


def recorded_shards(
    raw_dir: Path, raw: RldsRawRecord, endpoint: str | None = None
) -> list[RldsShard]:
    """The shards a raw record names (all of the version's, or a shard range's), in
    dataset_info.json's order: the local copies, or the bucket's objects in streaming mode."""
    info = parse_dataset_info(raw.dataset_info, f"{raw_dir}/{DATASET_INFO}", dataset=raw.dataset)
    shards = []
    for shard in info.shards:
        entry = raw.shards.get(shard.name)
        if entry is None:  # a shard range's record names only its own shards
            continue
        if raw.mode == "streaming":
            file = SourceFile(
                shard.name,
                store_url=raw.store_url,
                endpoint=endpoint,
                blob=entry["blob"],
                size=entry["size"],
                generation=entry["generation"],
            )
        else:
            file = SourceFile(shard.name, path=str(raw_dir / SHARDS_DIR / shard.name))
        shards.append(RldsShard(shard, file, version=fingerprint(entry)))
    return shards
