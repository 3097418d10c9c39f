"""Catalog rows per partition (a stage per source, with the integrity audit's check) and the
DuckDB catalog itself."""

import logging

import dagster as dg
import pyarrow.parquet as pq

from assets import versions
from assets.results import built_result
from assets.stage import Stage, StageRun
from episode_warehouse.catalog import CatalogStore
from episode_warehouse.catalog.schema import EPISODES, PARTITIONS
from episode_warehouse.curation.findings import audit_summary
from episode_warehouse.incremental import checkout, published

AUDIT = (
    "integrity_audit",
    "The integrity audit's findings in the rows (frames, frozen cameras, timestamps, NaN, "
    "actions, short episodes; dimensions of the whole partition): a warning naming each "
    "episode and step (reported by the asset itself: no extra step).",
)


def catalog_rows_stage(source: str) -> Stage:
    def run(stage: StageRun) -> dg.MaterializeResult:
        # Idempotent: rows that describe the same TED are kept (with their lineage).
        from episode_warehouse.stages.catalog import publish_catalog_rows

        layout = stage.warehouse.layout()
        built = publish_catalog_rows(layout, source, stage.key, code_version=stage.code_version,
                                     run_id=stage.run_id)  # fmt: skip
        rows_dir = CatalogStore(layout.root).partition_dir(source, stage.key)
        checkout(layout.root, rows_dir)  # a bucket's rows another machine published
        return built_result(
            built,
            checks=[_audit_result(rows_dir)],
            **stage.settings.viewer_link(layout.url, source, stage.key),
            episodes=built.meta.episodes,
            frames=built.meta.frames,
            catalog=dg.MetadataValue.path(str(CatalogStore(layout.root).db_path)),
            **{"dagster/row_count": built.meta.episodes, "dagster/column_schema": SCHEMA},
        )

    return Stage(
        f"{source}_catalog_rows",
        run,
        f"One catalog row per episode of a {source} partition (episodes and partitions tables "
        "of the DuckDB catalog), published atomically.",
        {"duckdb", "parquet"},
        versions.CATALOG_ROWS,
        group="catalog",
        pool="catalog_writer",
        checks=(AUDIT,),
    )


log = logging.getLogger(__name__)
SCHEMA = dg.TableSchema(
    columns=[dg.TableColumn(c.name, c.sql, description=c.doc) for c in EPISODES.columns]
)


def _audit_result(rows_dir) -> dg.AssetCheckResult:
    """The integrity audit's check, from the rows just published."""
    rows = pq.read_table(rows_dir / EPISODES.file_name, columns=["episode", "findings"])
    whole = pq.read_table(rows_dir / PARTITIONS.file_name, columns=["findings"])
    audit = audit_summary(
        rows.column("episode").to_pylist(),
        rows.column("findings").to_pylist(),
        whole.column("findings")[0].as_py() if whole.num_rows else None,
    )
    return dg.AssetCheckResult(
        check_name=AUDIT[0],
        passed=not (audit["episodes_with_findings"] or audit["partition_findings"]),
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            k: dg.MetadataValue.json(v) if isinstance(v, dict | list) else v
            for k, v in audit.items()
        },  # fmt: skip
    )


def _views(stage: StageRun) -> dg.MaterializeResult:
    """The DuckDB episode catalog: views over every partition's rows; drops rows of removed data."""
    # Idempotent: rebuilds the views file aside and prunes only rows whose TED is gone.
    layout = stage.warehouse.layout()
    store = CatalogStore(layout.root)
    store.ensure_database(rebuild=True)
    pruned = []
    for source, partition in store.published():
        if not published(layout.root, layout.ted_dir(source, partition)):
            store.remove_partition(source, partition)
            pruned.append(f"{source}/{partition}")
    if pruned:
        log.info("pruned catalog rows of %s", ", ".join(pruned))
    return dg.MaterializeResult(
        metadata={
            "partitions": len(store.published()),
            "pruned": dg.MetadataValue.json(pruned),
            "path": dg.MetadataValue.path(str(store.db_path)),
        }
    )


EPISODE_CATALOG = Stage(
    "episode_catalog",
    _views,
    "The DuckDB episode catalog: views over every partition's rows; drops rows of removed data.",
    {"duckdb"},
    versions.EPISODE_CATALOG,
    group="catalog",
    cron="*/15 * * * *",
    pool="catalog_writer",
)
