"""LeRobot v3.0 datasets: mirrored files -> decoded episodes (TED and catalog from factories)."""

import dagster as dg

from assets import versions
from assets.results import decoded_result, mirrored_result
from assets.retries import RAW_RETRY_POLICY, only_transient_retries
from assets.sources.spec import SourceAssets
from episode_warehouse.sources.lerobot.fingerprints import lerobot_fingerprints
from episode_warehouse.sources.lerobot.mirror import mirror_dataset
from episode_warehouse.sources.lerobot.repo_id import check_repo_id
from episode_warehouse.sources.lerobot.stage import decode_lerobot_stage
from resources import LeRobotSource, WarehouseStorage

lerobot_datasets = dg.DynamicPartitionsDefinition(name="lerobot_datasets")  # repo ids


@dg.asset(
    partitions_def=lerobot_datasets,
    group_name="lerobot_source",
    pool="download",  # bounded across runs and machines (docs/cluster.md)
    kinds={"lerobot", "parquet"},
    code_version=versions.LEROBOT_FILES,
    retry_policy=RAW_RETRY_POLICY,
    owners=["team:data-platform"],
)
def lerobot_files(
    context: dg.AssetExecutionContext, lerobot_source: LeRobotSource, warehouse: WarehouseStorage
) -> dg.MaterializeResult:
    """The meta/, data/ and videos/ files of one LeRobot v3.0 dataset (repo id owner/name),
    mirrored from LEROBOT_URL and checksummed."""
    # Idempotent: files whose size and generation match the published record are linked.
    with only_transient_retries(context):
        repo_id = check_repo_id(context.partition_key)
        layout = warehouse.layout()
        target = layout.raw_dir("lerobot", repo_id)
        built, report = mirror_dataset(
            lerobot_source.store(),
            repo_id,
            target,
            root=layout.root,
            code_version=versions.of(context),
            workers=lerobot_source.download_workers,
        )
    return mirrored_result(built, report, target)


@dg.asset(
    partitions_def=lerobot_datasets,
    deps=[lerobot_files],
    group_name="lerobot_source",
    kinds={"numpy"},
    code_version=versions.LEROBOT_EPISODES,
    automation_condition=dg.AutomationCondition.eager(),
    owners=["team:data-platform"],
)
def lerobot_episodes(
    context: dg.AssetExecutionContext, warehouse: WarehouseStorage
) -> dg.MaterializeResult:
    """Every frame of one LeRobot dataset, keys as TorchRL lays LeRobot data out: PNG pixels
    exact, video frames those LeRobotDataset decodes."""
    # Idempotent: rebuilt only when the files or this code version changed.
    with only_transient_retries(context):
        repo_id = check_repo_id(context.partition_key)
        layout = warehouse.layout()
        built = decode_lerobot_stage(layout, repo_id, code_version=versions.of(context))
        return decoded_result(
            built,
            layout.decoded_dir("lerobot", repo_id),
            tasks=len(built.meta.tasks),
            fps=built.meta.fps,
            keys=dg.MetadataValue.json(built.meta.arrays),
        )


ASSETS = SourceAssets(
    name="lerobot",
    partitions=lerobot_datasets,
    raw=lerobot_files,
    decoded=lerobot_episodes,
    group="lerobot_source",  # "lerobot" is the exports' group
    resource_key="lerobot_source",
    resource=LeRobotSource(),
    listing=lambda lerobot_source: lerobot_fingerprints(
        lerobot_source.store(), lerobot_source.watched_repos()
    ),
    sensor_description="Lists LEROBOT_URL; adds new <owner>/<name> datasets as partitions and "
    "requests lerobot_files for each dataset whose files appeared or changed.",
    pod={"requests": {"cpu": "4", "memory": "8Gi"}, "limits": {"memory": "16Gi"}},
)
