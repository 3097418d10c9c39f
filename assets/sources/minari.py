"""Farama Minari datasets: mirrored files -> decoded episodes (TED and catalog from factories)."""

import dagster as dg

from assets import versions
from assets.results import decoded_result, mirrored_result
from assets.retries import RAW_RETRY_POLICY, only_transient_retries
from assets.sources.spec import SourceAssets
from episode_warehouse.sources.minari.dataset_id import check_dataset_id
from episode_warehouse.sources.minari.fingerprints import minari_fingerprints
from episode_warehouse.sources.minari.mirror import mirror_dataset
from episode_warehouse.sources.minari.stage import decode_minari_stage
from resources import WarehouseStorage
from resources.minari_source import MinariSource

minari_datasets = dg.DynamicPartitionsDefinition(name="minari_datasets")  # dataset ids
# this source's code versions (assets/versions.py's rule: bump when a byte of the output changes)
FILES_VERSION = "1"
EPISODES_VERSION = "2"  # 2: truncations kept as recorded (#48)


@dg.asset(
    partitions_def=minari_datasets,
    group_name="minari",
    pool="download",  # bounded across runs and machines (docs/cluster.md)
    kinds={"minari", "hdf5"},
    code_version=FILES_VERSION,
    retry_policy=RAW_RETRY_POLICY,
    owners=["team:data-platform"],
)
def minari_files(
    context: dg.AssetExecutionContext, minari_source: MinariSource, warehouse: WarehouseStorage
) -> dg.MaterializeResult:
    """The data/ files of one Minari dataset (namespace/env/name-vN), mirrored from MINARI_URL
    and checksummed."""
    # Idempotent: files whose size and generation match the published record are linked.
    with only_transient_retries(context):
        dataset_id = check_dataset_id(context.partition_key)
        layout = warehouse.layout()
        target = layout.raw_dir("minari", dataset_id)
        store, organization = minari_source.store()
        built, report = mirror_dataset(
            store, organization, dataset_id, target, root=layout.root,
            code_version=versions.of(context), workers=minari_source.download_workers,
        )  # fmt: skip
    return mirrored_result(built, report, target)


@dg.asset(
    partitions_def=minari_datasets,
    deps=[minari_files],
    group_name="minari",
    kinds={"numpy"},
    code_version=EPISODES_VERSION,
    automation_condition=dg.AutomationCondition.eager(),
    owners=["team:data-platform"],
)
def minari_episodes(
    context: dg.AssetExecutionContext, warehouse: WarehouseStorage
) -> dg.MaterializeResult:
    """Every step of one Minari dataset (any backend: hdf5, arrow, parquet), keys as TorchRL's
    MinariExperienceReplay names them, each episode's final observation kept."""
    # Idempotent: rebuilt only when the files or this code version changed.
    with only_transient_retries(context):
        dataset_id = check_dataset_id(context.partition_key)
        layout = warehouse.layout()
        built = decode_minari_stage(
            layout, dataset_id, code_version=versions.of(context), limits=warehouse.input_limits()
        )
        return decoded_result(
            built,
            layout.decoded_dir("minari", dataset_id),
            backend=built.meta.extra.get("minari", {}).get("data_format", ""),
            keys=dg.MetadataValue.json(built.meta.arrays),
        )


ASSETS = SourceAssets(
    name="minari",
    partitions=minari_datasets,
    raw=minari_files,
    decoded=minari_episodes,
    group="minari",
    resource_key="minari_source",
    resource=MinariSource(),
    listing=lambda minari_source: minari_fingerprints(
        minari_source.store()[0], minari_source.location()[1], minari_source.watched_datasets()
    ),
    sensor_description="Lists MINARI_URL; adds new namespace/env/name-vN datasets as "
    "partitions and requests minari_files for each dataset whose files appeared or changed.",
    pod={"requests": {"cpu": "2", "memory": "8Gi"}, "limits": {"memory": "16Gi"}},
)
