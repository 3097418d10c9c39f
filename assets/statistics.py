"""Per-episode statistics of each partition's TED, kept in the catalog (a stage per source)."""

import dagster as dg

from assets import versions
from assets.results import built_result
from assets.stage import Stage, StageRun


def statistics_stage(source: str) -> Stage:
    def run(stage: StageRun) -> dg.MaterializeResult:
        # Idempotent: computed once per TED version.
        from episode_warehouse.catalog.statistics import publish_statistics

        layout = stage.warehouse.layout()
        built = publish_statistics(layout, source, stage.key, code_version=stage.code_version)
        return built_result(
            built, keys=dg.MetadataValue.json(built.meta.keys), rows=built.meta.rows
        )

    return Stage(
        f"{source}_statistics",
        run,
        f"Mergeable per-episode statistics (moments, extremes, histograms) of every numeric key "
        f"of a {source} partition's TED: the catalog's statistics table, so selection_stats over "
        "whole episodes is a query.",
        {"parquet"},
        versions.STATISTICS,
        group="catalog",
    )
