"""Curation wiring: a score asset per (source, score) and the warehouse's duplicates
(docs/curation.md; the integrity audit's check is the catalog rows asset's own)."""

import os
from collections import Counter

import dagster as dg

from assets import versions
from assets.retries import only_transient_retries
from episode_warehouse.curation.scores import BUILT_IN, Score, load_scores
from resources import WarehouseStorage

SCORES_ENV = "EPISODE_WAREHOUSE_SCORES"  # module:attribute of users' scores, comma-separated


def registered_scores() -> list[Score]:
    """The built-in scores and those ``EPISODE_WAREHOUSE_SCORES`` names (read when the code
    location loads: a new score is a reload of the location)."""
    scores = [*BUILT_IN, *load_scores(os.environ.get(SCORES_ENV, ""))]
    twice = [n for n, c in Counter(s.name for s in scores).items() if c > 1]
    if twice:
        raise dg.DagsterInvalidDefinitionError(
            f"scores named twice: {twice}; give each score in {SCORES_ENV} a name of its own"
        )
    return scores


def score_asset(
    source: str,
    partitions_def: dg.PartitionsDefinition,
    ted: dg.AssetsDefinition,
    rows: dg.AssetsDefinition,
    score: Score,
) -> dg.AssetsDefinition:
    @dg.asset(
        name=f"{source}_score_{score.name}",
        partitions_def=partitions_def,
        deps=[ted, rows],
        group_name="curation",
        kinds={"parquet"},
        code_version=score.version,
        automation_condition=dg.AutomationCondition.eager(),
        owners=["team:data-platform"],
        description=f"The score {score.name!r} of every episode of a {source} partition "
        f"({score.doc}): the catalog column score_{score.name}.",
    )
    def _score(context: dg.AssetExecutionContext, warehouse: WarehouseStorage):
        # Idempotent: computed once per TED, catalog rows and score version.
        with only_transient_retries(context):
            from episode_warehouse.stages.curation import publish_episode_scores

            built = publish_episode_scores(warehouse.layout(), score, source, context.partition_key)
            return dg.MaterializeResult(
                metadata={
                    "episodes": built.meta.episodes,
                    "scored": built.meta.scored,
                    "rebuilt": built.rebuilt,
                },
                data_version=dg.DataVersion(built.version),
            )

    return _score


def duplicates_asset(rows_assets: list[dg.AssetsDefinition]) -> dg.AssetsDefinition:
    @dg.asset(
        name="episode_duplicates",
        deps=rows_assets,
        group_name="curation",
        kinds={"duckdb", "parquet"},
        code_version=versions.DUPLICATES,
        automation_condition=dg.AutomationCondition.on_cron("*/15 * * * *"),
        owners=["team:data-platform"],
        pool="catalog_writer",
        description="Exact and near duplicate episodes over the whole catalog, within and "
        "across datasets: the episodes view's near_duplicate_of and duplicate_group.",
    )
    def _duplicates(context: dg.AssetExecutionContext, warehouse: WarehouseStorage):
        # Idempotent: found again only when a partition's catalog rows changed.
        with only_transient_retries(context):
            from episode_warehouse.stages.curation import publish_duplicates

            built = publish_duplicates(warehouse.layout())
            return dg.MaterializeResult(
                metadata={
                    "episodes": built.meta.episodes,
                    "dropped": built.meta.dropped,
                    "groups": built.meta.groups,
                    "rebuilt": built.rebuilt,
                },
                data_version=dg.DataVersion(built.version),
            )

    return _duplicates
