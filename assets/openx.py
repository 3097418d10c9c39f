"""OpenX-Embodiment: tar shards -> decoded episodes (TED and catalog come from factories)."""

import time

import dagster as dg

from assets import versions
from assets.partitions import openx_datasets
from assets.stage import build_stage, raw_inputs
from episode_warehouse.atomic import write_lock
from episode_warehouse.errors import ConfigError
from episode_warehouse.openx.datasets import check_dataset_id
from episode_warehouse.openx.decode import decode_shards
from episode_warehouse.openx.mirror import (
    manifest_shards,
    mirror_shards,
    read_manifest,
    record_listing,
)
from resources import OpenXSource, WarehouseStorage


@dg.asset(
    partitions_def=openx_datasets,
    group_name="openx",
    kinds={"huggingface", "tar"},
    code_version=versions.OPENX_SHARDS,
    owners=["team:data-platform"],
)
def openx_shards(
    context: dg.AssetExecutionContext, openx_source: OpenXSource, warehouse: WarehouseStorage
) -> dg.MaterializeResult:
    """WebDataset tar shards of one OpenX dataset: mirrored (download) or listed (streaming)."""
    # Idempotent: shards whose version matches the manifest are not copied again.
    dataset = check_dataset_id(context.partition_key)
    if openx_source.mode not in ("download", "streaming"):
        raise ConfigError(
            f"unknown mode {openx_source.mode!r}",
            subject="OPENX_MODE",
            fix="set OPENX_MODE to 'download' or 'streaming'",
        )
    dest = warehouse.layout().raw_dir("openx", dataset)
    listing = openx_source.shards(dataset)
    started = time.perf_counter()
    with write_lock(dest):
        if openx_source.mode == "download":
            manifest = mirror_shards(listing, dest, openx_source.url)
        else:
            manifest = record_listing(listing, dest, openx_source.url)
    total = sum(s.size for s in listing.shards)
    return dg.MaterializeResult(
        metadata={
            "source_url": openx_source.url,
            "mode": openx_source.mode,
            "revision": listing.revision,
            "shards": len(listing.shards),
            "bytes": total,
            "copied": manifest["copied"],
            "seconds": round(time.perf_counter() - started, 2),
            "shard_versions": dg.MetadataValue.json(manifest["shards"]),
            "path": dg.MetadataValue.path(str(dest)),
        },
        data_version=dg.DataVersion(manifest["source_version"]),
    )


@dg.asset(
    partitions_def=openx_datasets,
    deps=[openx_shards],
    group_name="openx",
    kinds={"numpy"},
    code_version=versions.OPENX_EPISODES,
    automation_condition=dg.AutomationCondition.eager(),
    owners=["team:data-platform"],
)
def openx_episodes(
    context: dg.AssetExecutionContext, warehouse: WarehouseStorage
) -> dg.MaterializeResult:
    """Steps of every episode of one OpenX dataset: images decoded, pickles unpickled safely."""
    # Idempotent: rebuilt only when the shards or this code version changed.
    dataset = check_dataset_id(context.partition_key)
    layout = warehouse.layout()
    raw = raw_inputs(
        layout, "openx", dataset, read_manifest, versions.OPENX_EPISODES, "openx_shards"
    )
    started = time.perf_counter()
    meta, rebuilt = build_stage(
        layout.decoded_dir("openx", dataset),
        raw.built_from,
        lambda tmp: decode_shards(
            manifest_shards(raw.folder, raw.manifest), tmp, lineage=raw.lineage
        ),
    )
    seconds = time.perf_counter() - started
    return dg.MaterializeResult(
        metadata={
            "frames": meta["rows"],
            "episodes": meta["episodes"],
            "tasks": len(meta.get("tasks", [])),
            "keys": dg.MetadataValue.json(meta["arrays"]),
            "rebuilt": rebuilt,
            "frames_per_s": round(meta["rows"] / seconds) if rebuilt else 0,
            "path": dg.MetadataValue.path(str(layout.decoded_dir("openx", dataset))),
        }
    )
