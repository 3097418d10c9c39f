"""Per-episode statistics of each partition's TED, kept in the catalog (factory, per source)."""

import dagster as dg

from assets import versions
from assets.retries import only_transient_retries
from resources import WarehouseStorage


def statistics_asset(
    source: str, partitions_def: dg.PartitionsDefinition, ted: dg.AssetsDefinition
) -> dg.AssetsDefinition:
    @dg.asset(
        name=f"{source}_statistics",
        partitions_def=partitions_def,
        deps=[ted],
        group_name="catalog",
        kinds={"parquet"},
        code_version=versions.STATISTICS,
        automation_condition=dg.AutomationCondition.eager(),
        owners=["team:data-platform"],
        description=f"Mergeable per-episode statistics (moments, extremes, histograms) of every "
        f"numeric key of a {source} partition's TED: the catalog's statistics table, so "
        "selection_stats over whole episodes is a query.",
    )
    def _statistics(
        context: dg.AssetExecutionContext, warehouse: WarehouseStorage
    ) -> dg.MaterializeResult:
        # Idempotent: computed once per TED version.
        with only_transient_retries(context):
            from episode_warehouse.catalog.statistics import publish_statistics

            built = publish_statistics(
                warehouse.layout(), source, context.partition_key, code_version=versions.of(context)
            )
            return dg.MaterializeResult(
                metadata={
                    "keys": dg.MetadataValue.json(built.meta.keys),
                    "rows": built.meta.rows,
                    "rebuilt": built.rebuilt,
                },
                data_version=dg.DataVersion(built.version),
            )

    return _statistics
