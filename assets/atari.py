"""Atari DQN Replay: checkpoint files -> decoded episodes (TED and catalog come from factories)."""

import time

import dagster as dg

from assets import versions
from assets.partitions import atari_runs
from assets.stage import build_stage, raw_inputs
from episode_warehouse.atari.decode import decode_run
from episode_warehouse.atari.games import parse_partition_key
from episode_warehouse.atari.mirror import mirror_run, read_manifest
from episode_warehouse.atomic import write_lock
from resources import AtariReplaySource, WarehouseStorage


@dg.asset(
    partitions_def=atari_runs,
    group_name="atari",
    kinds={"gcs", "gzip"},
    code_version=versions.ATARI_REPLAY_FILES,
    owners=["team:data-platform"],
)
def atari_replay_files(
    context: dg.AssetExecutionContext, atari_replay: AtariReplaySource, warehouse: WarehouseStorage
) -> dg.MaterializeResult:
    """Dopamine checkpoint files of one game/run mirrored from ATARI_REPLAY_URL, crc32c-checked."""
    # Idempotent: files whose size, crc32c and generation match the manifest are not fetched.
    game, run = parse_partition_key(context.partition_key)
    dest = warehouse.layout().raw_dir("atari", context.partition_key)
    with write_lock(dest):
        report = mirror_run(
            atari_replay.store(),
            game,
            run,
            dest,
            atari_replay.subset(),
            workers=atari_replay.download_workers,
        )
    files = report.manifest["files"]
    total = sum(f["size"] for f in files.values())
    return dg.MaterializeResult(
        metadata={
            "source_url": report.manifest["source_url"],
            "suffixes": dg.MetadataValue.json(report.manifest["suffixes"]),
            "checkpoint_subset": report.manifest["subset"],
            "files": len(files),
            "bytes": total,
            "downloaded": len(report.downloaded),
            "skipped_up_to_date": len(report.skipped),
            "retries": report.stats.retries,
            "MB_per_s": round(report.stats.downloaded_bytes / 1e6 / max(report.seconds, 1e-9), 1),
            "file_versions": dg.MetadataValue.json(files),
            "path": dg.MetadataValue.path(str(dest)),
        },
        data_version=dg.DataVersion(report.manifest["source_version"]),
    )


@dg.asset(
    partitions_def=atari_runs,
    deps=[atari_replay_files],
    group_name="atari",
    kinds={"numpy"},
    code_version=versions.ATARI_EPISODES,
    automation_condition=dg.AutomationCondition.eager(),
    owners=["team:data-platform"],
)
def atari_episodes(
    context: dg.AssetExecutionContext, warehouse: WarehouseStorage
) -> dg.MaterializeResult:
    """Real steps of one game/run in stream order: padding dropped, episodes stitched."""
    # Idempotent: rebuilt only when the mirrored files or this code version changed.
    key = context.partition_key
    layout = warehouse.layout()
    raw = raw_inputs(
        layout, "atari", key, read_manifest, versions.ATARI_EPISODES, "atari_replay_files"
    )
    started = time.perf_counter()
    meta, rebuilt = build_stage(
        layout.decoded_dir("atari", key),
        raw.built_from,
        lambda tmp: decode_run(
            raw.folder / "replay_logs",
            raw.manifest["suffixes"],
            tmp,
            workers=warehouse.workers,
            file_prefix=f"{key}/replay_logs/",
            lineage=raw.lineage,
        ),
    )
    seconds = time.perf_counter() - started
    context.log.info(
        "%s %s: %d frames, %d episodes",
        "decoded" if rebuilt else "up to date",
        key,
        meta["rows"],
        meta["episodes"],
    )
    return dg.MaterializeResult(
        metadata={
            "frames": meta["rows"],
            "episodes": meta["episodes"],
            "padding_rows_dropped": meta["padding_rows"],
            "lost_rows": meta["lost_rows"],
            "gaps": dg.MetadataValue.json(meta["gaps"]),
            "suffixes": dg.MetadataValue.json(meta["suffixes"]),
            "rebuilt": rebuilt,
            "frames_per_s": round(meta["rows"] / seconds) if rebuilt else 0,
            "path": dg.MetadataValue.path(str(layout.decoded_dir("atari", key))),
        }
    )
