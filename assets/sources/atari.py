"""Atari DQN Replay: checkpoint files -> decoded episodes (TED and catalog come from factories)."""

import dagster as dg

from assets import versions
from assets.checks import recorded_returns_check
from assets.results import decoded_result
from assets.retries import RAW_RETRY_POLICY, only_transient_retries
from assets.sources.spec import SourceAssets
from episode_warehouse.sources.atari.fingerprints import atari_fingerprints
from episode_warehouse.sources.atari.games import PARTITION_KEYS, parse_partition_key
from episode_warehouse.sources.atari.mirror import mirror_run
from episode_warehouse.sources.atari.stage import decode_atari
from resources import AtariReplaySource, WarehouseStorage

atari_runs = dg.StaticPartitionsDefinition(list(PARTITION_KEYS))  # the 300 keys of the dataset


@dg.asset(
    partitions_def=atari_runs,
    group_name="atari",
    pool="download",  # bounded across runs and machines (docs/cluster.md)
    kinds={"gcs", "gzip"},
    code_version=versions.ATARI_REPLAY_FILES,
    retry_policy=RAW_RETRY_POLICY,
    owners=["team:data-platform"],
)
def atari_replay_files(
    context: dg.AssetExecutionContext, atari_replay: AtariReplaySource, warehouse: WarehouseStorage
) -> dg.MaterializeResult:
    """The files of one game/run (RL Unplugged or Dopamine layout) from ATARI_REPLAY_URL."""
    # Idempotent: unchanged files (size, generation, crc32c) are linked, not fetched again.
    with only_transient_retries(context):
        game, run = parse_partition_key(context.partition_key)
        layout = warehouse.layout()
        target = layout.raw_dir("atari", context.partition_key)
        built, report = mirror_run(
            atari_replay.store(),
            game,
            run,
            target,
            atari_replay.subset(),
            root=layout.root,
            code_version=versions.of(context),
            workers=atari_replay.download_workers,
            layout=atari_replay.layout(),
            mode=atari_replay.source_mode(),
        )
    files = built.meta.files
    return dg.MaterializeResult(
        metadata={
            "source_url": built.meta.source_url,
            "suffixes": dg.MetadataValue.json(built.meta.suffixes),
            "checkpoint_subset": built.meta.subset,
            "layout": built.meta.layout,
            "mode": built.meta.mode,
            "files": len(files),
            "bytes": sum(f["size"] for f in files.values()),
            "downloaded": len(report.downloaded),
            "rebuilt": built.rebuilt,
            "retries": report.stats.retries,
            "MB_per_s": round(report.stats.downloaded_bytes / 1e6 / max(report.seconds, 1e-9), 1),
            "file_versions": dg.MetadataValue.json(files),
            "path": dg.MetadataValue.path(str(target)),
        },
        data_version=dg.DataVersion(built.version),
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
    context: dg.AssetExecutionContext, atari_replay: AtariReplaySource, warehouse: WarehouseStorage
) -> dg.MaterializeResult:
    """Real steps of one game/run in episode order (Dopamine: padding dropped, episodes
    stitched across files; RL Unplugged: each record's N-1 transitions)."""
    # Idempotent: rebuilt only when the mirrored files or this code version changed.
    with only_transient_retries(context):
        key = context.partition_key
        layout = warehouse.layout()
        built = decode_atari(
            layout,
            key,
            code_version=versions.of(context),
            workers=warehouse.decode_processes(),
            endpoint=atari_replay.endpoint(),
            limits=warehouse.input_limits(),
        )
        own = built.meta.extra  # the Atari decoders' own fields (DecodedRecord.extra)
        details = {"time_limited_episodes": own.get("time_limited_episodes", 0)}
        if own.get("format_source") == "rl_unplugged":
            details["files"] = dg.MetadataValue.json(own["files"])
        else:
            details |= {
                "padding_rows_dropped": own["padding_rows"],
                "lost_rows": own["lost_rows"],
                "gaps": dg.MetadataValue.json(own["gaps"]),
                "suffixes": dg.MetadataValue.json(own["suffixes"]),
            }
        return decoded_result(built, layout.decoded_dir("atari", key), **details)


ASSETS = SourceAssets(
    name="atari",
    partitions=atari_runs,
    raw=atari_replay_files,
    decoded=atari_episodes,
    group="atari",
    resource_key="atari_replay",
    resource=AtariReplaySource(),
    listing=lambda atari_replay: atari_fingerprints(atari_replay.store()),
    sensor_description="Lists ATARI_REPLAY_URL; requests atari_replay_files for each game/run "
    "whose files appeared or changed (generation/crc32c). Automation then rebuilds downstream.",
    row_checks=(recorded_returns_check,),
    pod={"requests": {"cpu": "2", "memory": "6Gi"}, "limits": {"memory": "10Gi"}},
)
