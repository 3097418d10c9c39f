"""Catalog rows per partition (factory, one per source) and the DuckDB catalog itself."""

import dagster as dg
import pyarrow.parquet as pq

from assets import versions
from assets.retries import only_transient_retries
from episode_warehouse.catalog import CatalogStore
from episode_warehouse.catalog.schema import EPISODES, PARTITIONS
from episode_warehouse.curation.findings import audit_summary
from episode_warehouse.incremental import checkout, published
from episode_warehouse.sources import registry
from resources import RunSettings, WarehouseStorage


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
        check_specs=[
            dg.AssetCheckSpec(
                "integrity_audit",
                asset=f"{source}_catalog_rows",
                description="The integrity audit's findings in the rows (frames, frozen "
                "cameras, timestamps, NaN, actions at bounds, one-step episodes): a warning "
                "naming each episode and step (reported by the asset itself: no extra step).",
            )
        ],
    )
    def _rows(
        context: dg.AssetExecutionContext, warehouse: WarehouseStorage, run_settings: RunSettings
    ) -> dg.MaterializeResult:
        # Idempotent: rows that describe the same TED are kept (with their lineage).
        with only_transient_retries(context):
            from episode_warehouse.stages.catalog import publish_catalog_rows

            layout = warehouse.layout()
            built = publish_catalog_rows(
                layout,
                source,
                context.partition_key,
                code_version=versions.of(context),
                run_id=context.run.run_id,
            )
            rows_dir = CatalogStore(layout.root).partition_dir(source, context.partition_key)
            checkout(layout.root, rows_dir)  # a bucket's rows another machine published
            rows = pq.read_table(rows_dir / EPISODES.file_name, columns=["episode", "findings"])
            whole = pq.read_table(rows_dir / PARTITIONS.file_name, columns=["findings"])
            audit = audit_summary(
                rows.column("episode").to_pylist(),
                rows.column("findings").to_pylist(),
                whole.column("findings")[0].as_py() if whole.num_rows else None,
            )
            return dg.MaterializeResult(
                check_results=[
                    dg.AssetCheckResult(
                        check_name="integrity_audit",
                        passed=not (audit["episodes_with_findings"] or audit["partition_findings"]),
                        severity=dg.AssetCheckSeverity.WARN,
                        metadata={
                            k: dg.MetadataValue.json(v) if isinstance(v, dict | list) else v
                            for k, v in audit.items()
                        },  # fmt: skip
                    )
                ],
                metadata={
                    "episodes": built.meta.episodes,
                    "frames": built.meta.frames,
                    "rebuilt": built.rebuilt,
                    **run_settings.viewer_link(layout.url, source, context.partition_key),
                    "catalog": dg.MetadataValue.path(str(CatalogStore(layout.root).db_path)),
                    "dagster/row_count": built.meta.episodes,
                    "dagster/column_schema": dg.TableSchema(
                        columns=[
                            dg.TableColumn(c.name, c.sql, description=c.doc)
                            for c in EPISODES.columns
                        ]
                    ),
                },
                data_version=dg.DataVersion(built.version),
            )

    return _rows


@dg.asset(
    deps=[dg.AssetKey(f"{s}_catalog_rows") for s in registry.names()],  # every source
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
    with only_transient_retries(context):
        layout = warehouse.layout()
        store = CatalogStore(layout.root)
        store.ensure_database(rebuild=True)
        pruned = []
        for source, partition in store.published():
            if not published(layout.root, layout.ted_dir(source, partition)):
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
