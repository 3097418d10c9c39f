"""Open X-Embodiment: RLDS shards or WebDataset tars -> decoded episodes (TED and catalog come
from factories)."""

import dagster as dg

from assets import versions
from assets.results import decoded_result
from assets.retries import RAW_RETRY_POLICY, only_transient_retries
from assets.sources.spec import SourceAssets
from episode_warehouse.sources.openx.datasets import check_dataset_id
from episode_warehouse.sources.openx.fingerprints import openx_fingerprints
from episode_warehouse.sources.openx.record import RldsRawRecord
from episode_warehouse.sources.openx.stage import decode_openx
from resources import OpenXSource, WarehouseStorage

openx_datasets = dg.DynamicPartitionsDefinition(name="openx_datasets")


@dg.asset(
    partitions_def=openx_datasets,
    group_name="openx",
    pool="download",  # bounded across runs and machines (docs/cluster.md)
    kinds={"gcs", "tfrecord", "huggingface", "tar"},
    code_version=versions.OPENX_SHARDS,
    retry_policy=RAW_RETRY_POLICY,
    owners=["team:data-platform"],
)
def openx_shards(
    context: dg.AssetExecutionContext, openx_source: OpenXSource, warehouse: WarehouseStorage
) -> dg.MaterializeResult:
    """The shards of one OpenX dataset (an RLDS version folder, or WebDataset tars): mirrored
    (download) or listed (streaming)."""
    # Idempotent: shards whose version matches the published record are linked, not copied.
    with only_transient_retries(context):
        dataset = check_dataset_id(context.partition_key)
        layout = warehouse.layout()
        target = layout.raw_dir("openx", dataset)
        built = openx_source.mirror(layout.root, dataset, target, versions.of(context))
    return dg.MaterializeResult(
        metadata={
            "source_url": built.meta.source_url,
            "layout": "rlds" if isinstance(built.meta, RldsRawRecord) else "webdataset",
            "mode": built.meta.mode,
            "revision": built.meta.revision,
            "shards": len(built.meta.shards),
            "bytes": sum(s["size"] for s in built.meta.shards.values()),
            "copied": built.meta.copied if built.rebuilt else 0,
            "rebuilt": built.rebuilt,
            "shard_versions": dg.MetadataValue.json(built.meta.shards),
            "path": dg.MetadataValue.path(str(target)),
        },
        data_version=dg.DataVersion(built.version),
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
    context: dg.AssetExecutionContext, openx_source: OpenXSource, warehouse: WarehouseStorage
) -> dg.MaterializeResult:
    """Steps of every episode of one OpenX dataset: images decoded, records parsed from
    features.json (RLDS) or pickles unpickled safely (WebDataset)."""
    # Idempotent: rebuilt only when the shards or this code version changed.
    with only_transient_retries(context):
        dataset = check_dataset_id(context.partition_key)
        layout = warehouse.layout()
        built = decode_openx(
            layout,
            dataset,
            code_version=versions.of(context),
            limits=warehouse.input_limits(),
            endpoint=openx_source.endpoint(),
        )
        return decoded_result(
            built,
            layout.decoded_dir("openx", dataset),
            tasks=len(built.meta.tasks),
            shards=len(built.meta.extra.get("shards", {})),
            shards_copied=built.meta.extra.get("reused_shards", 0),  # unchanged since last build
            keys=dg.MetadataValue.json(built.meta.arrays),
        )


ASSETS = SourceAssets(
    name="openx",
    partitions=openx_datasets,
    raw=openx_shards,
    decoded=openx_episodes,
    group="openx",
    resource_key="openx_source",
    resource=OpenXSource(),
    listing=lambda openx_source: openx_fingerprints(
        openx_source.source_url(), openx_source.endpoint()
    ),
    sensor_description="Lists OPENX_URL; adds new dataset folders (RLDS version folders or "
    "WebDataset tars) as partitions and requests openx_shards for each dataset whose files "
    "appeared or changed.",
    pod={"requests": {"cpu": "4", "memory": "16Gi"}, "limits": {"memory": "24Gi"}},
)
