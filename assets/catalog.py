"""Catalog rows per partition (factory, one per source) and the DuckDB catalog itself."""

import hashlib
import json
from datetime import UTC, datetime

import dagster as dg

from assets import versions
from assets.stage import published_meta
from episode_warehouse.catalog.rows import catalog_rows
from episode_warehouse.catalog.schema import EPISODES
from episode_warehouse.ted.layout import META
from resources import WarehouseStorage


def catalog_rows_asset(
    source: str, partitions_def: dg.PartitionsDefinition, ted: dg.AssetsDefinition
) -> dg.AssetsDefinition:
    @dg.asset(
        name=f"{source}_catalog_rows",
        partitions_def=partitions_def,
        deps=[ted],
        group_name="catalog",
        kinds={"duckdb", "parquet"},
        code_version=versions.CATALOG_ROWS,
        automation_condition=dg.AutomationCondition.eager(),
        owners=["team:data-platform"],
        pool="catalog_writer",
        description=f"One catalog row per episode of a {source} partition (episodes and "
        "partitions tables of the DuckDB catalog), published atomically.",
    )
    def _rows(
        context: dg.AssetExecutionContext, warehouse: WarehouseStorage
    ) -> dg.MaterializeResult:
        # Idempotent: a partition's rows are one Parquet file, replaced whole.
        key = context.partition_key
        layout = warehouse.layout()
        ted_dir = layout.ted_dir(source, key)
        built_from = published_meta(ted_dir).get("built_from")
        code_version = f"ted={versions.TED},rows={versions.CATALOG_ROWS}"
        data_version = hashlib.sha256(json.dumps(built_from, sort_keys=True).encode()).hexdigest()[
            :16
        ]
        store = warehouse.catalog()
        published = store.partition_row(source, key)
        if published and (published["data_version"], published["code_version"]) == (
            data_version,
            code_version,
        ):  # the rows describe this very TED already: keep them (and their lineage)
            return dg.MaterializeResult(
                metadata={
                    "episodes": published["episodes"],
                    "frames": published["frames"],
                    "rebuilt": False,
                    "catalog": dg.MetadataValue.path(str(store.db_path)),
                }
            )
        episodes, partition_row = catalog_rows(
            ted_dir,
            source,
            key,
            code_version=code_version,
            run_id=context.run_id,
            data_version=data_version,
            materialized_at=datetime.now(UTC),
        )
        store.publish_partition(source, key, episodes, partition_row)
        return dg.MaterializeResult(
            metadata={
                "episodes": episodes.num_rows,
                "frames": partition_row["frames"],
                "rebuilt": True,
                "catalog": dg.MetadataValue.path(str(store.db_path)),
                "dagster/row_count": episodes.num_rows,
                "dagster/column_schema": dg.TableSchema(
                    columns=[
                        dg.TableColumn(c.name, c.sql, description=c.doc) for c in EPISODES.columns
                    ]
                ),
            }
        )

    return _rows


@dg.asset(
    deps=[dg.AssetKey("atari_catalog_rows"), dg.AssetKey("openx_catalog_rows")],
    group_name="catalog",
    kinds={"duckdb"},
    code_version=versions.EPISODE_CATALOG,
    owners=["team:data-platform"],
    pool="catalog_writer",
    automation_condition=dg.AutomationCondition.on_cron("*/15 * * * *"),
)
def episode_catalog(
    context: dg.AssetExecutionContext, warehouse: WarehouseStorage
) -> dg.MaterializeResult:
    """The DuckDB episode catalog: views over every partition's rows; drops rows of removed data."""
    # Idempotent: rebuilds the views file aside and prunes only rows whose TED is gone.
    layout = warehouse.layout()
    store = warehouse.catalog()
    store.ensure_database(rebuild=True)
    pruned = []
    for source, partition in store.published():
        if not (layout.ted_dir(source, partition) / META).is_file():
            store.remove_partition(source, partition)
            pruned.append(f"{source}/{partition}")
    if pruned:
        context.log.info("pruned catalog rows of %s", ", ".join(pruned))
    return dg.MaterializeResult(
        metadata={
            "partitions": len(store.published()),
            "pruned": dg.MetadataValue.json(pruned),
            "path": dg.MetadataValue.path(str(store.db_path)),
        }
    )
