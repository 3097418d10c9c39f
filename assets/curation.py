"""Curation wiring: a score stage per (source, score) and the warehouse's duplicates
(docs/curation.md; the integrity audit's check is the catalog rows asset's own)."""

import os
from collections import Counter

import dagster as dg

from assets import versions
from assets.results import built_result
from assets.stage import Stage, StageRun
from episode_warehouse.curation.scores import BUILT_IN, Score, load_scores

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


def score_stage(source: str, score: Score) -> Stage:
    def run(stage: StageRun) -> dg.MaterializeResult:
        # Idempotent: computed once per TED, catalog rows and score version.
        from episode_warehouse.stages.curation import publish_episode_scores

        built = publish_episode_scores(stage.warehouse.layout(), score, source, stage.key)
        return built_result(built, episodes=built.meta.episodes, scored=built.meta.scored)

    return Stage(
        f"{source}_score_{score.name}",
        run,
        f"The score {score.name!r} of every episode of a {source} partition ({score.doc}): the "
        f"catalog column score_{score.name}.",
        {"parquet"},
        score.version,
        group="curation",
    )


def _find_duplicates(stage: StageRun) -> dg.MaterializeResult:
    # Idempotent: found again only when a partition's catalog rows changed.
    from episode_warehouse.stages.curation import publish_duplicates

    built = publish_duplicates(stage.warehouse.layout())
    meta = built.meta
    return built_result(built, episodes=meta.episodes, dropped=meta.dropped, groups=meta.groups)


DUPLICATES = Stage(
    "episode_duplicates",
    _find_duplicates,
    "Exact and near duplicate episodes over the whole catalog, within and across datasets: "
    "the episodes view's near_duplicate_of and duplicate_group.",
    {"duckdb", "parquet"},
    versions.DUPLICATES,
    group="curation",
    cron="*/15 * * * *",
    pool="catalog_writer",
)
