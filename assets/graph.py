"""The asset graph, generated from the source registry (``assets/sources``).

Per source: its own raw and decoded assets, then the generated stages ``{name}_ted``,
``{name}_catalog_rows``, ``{name}_statistics``, ``{name}_standardized``,
``{name}_lerobot_export`` and ``{name}_score_<score>``, with their checks;
across sources: the episode catalog, the duplicates and the named-selection exports.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import dagster as dg

from assets import stage as factory
from assets.catalog import EPISODE_CATALOG, catalog_rows_stage
from assets.checks import croissant_check, export_check, rows_check, ted_check
from assets.curation import DUPLICATES, registered_scores, score_stage
from assets.lerobot import partition_export_stage, selection_lerobot_export
from assets.sources import SOURCE_ASSETS
from assets.sources.spec import SourceAssets
from assets.standardized import standardized_stage
from assets.statistics import statistics_stage
from assets.ted import ted_stage
from episode_warehouse.export.request import partition_export_name


@dataclass(frozen=True)
class SourceGraph:
    """One source's assets by stage (``warehouse_cli.arguments.STAGES``), its statistics asset
    and its checks."""

    source: SourceAssets
    stages: dict[str, dg.AssetsDefinition]
    statistics: dg.AssetsDefinition
    checks: list[dg.AssetChecksDefinition]
    scores: list[dg.AssetsDefinition]

    def assets(self) -> list[dg.AssetsDefinition]:
        return [*self.stages.values(), self.statistics, *self.scores]


def _partition_export_name(source: str):
    def name(context) -> str:
        video = (
            context.run_config.get("ops", {})
            .get(f"{source}_lerobot_export", {})
            .get("config", {})
            .get("video", False)
        )
        return partition_export_name(source, context.partition_key, video=video)

    return name


def source_graph(spec: SourceAssets) -> SourceGraph:
    """The generated stages of ``spec``'s source after its decoded asset."""
    name = spec.name

    def stage(declared, *deps):
        return factory.stage_asset(declared, source=name, partitions=spec.partitions, deps=deps)

    ted = stage(ted_stage(name, spec.group), spec.decoded)
    rows = stage(catalog_rows_stage(name), ted)
    export = stage(partition_export_stage(name), rows)
    standardized = stage(standardized_stage(name), ted)
    name_of = _partition_export_name(name)
    checks = [
        factory.check_asset(ted_check(name), ted),
        factory.check_asset(rows_check(name), rows),
        *(factory.check_asset(check, rows) for check in spec.row_checks),
        factory.check_asset(export_check(name_of), export),
        factory.check_asset(croissant_check(name_of), export),
    ]
    return SourceGraph(
        source=spec,
        stages={
            "raw": spec.raw,
            "decoded": spec.decoded,
            "ted": ted,
            "catalog": rows,
            "standardized": standardized,
            "lerobot": export,
        },  # fmt: skip
        statistics=stage(statistics_stage(name), ted),
        checks=checks,
        scores=[stage(score_stage(name, s), ted, rows) for s in registered_scores()],
    )


def build_graph(
    sources: Iterable[SourceAssets],
) -> tuple[dict[str, SourceGraph], list[dg.AssetsDefinition], list[dg.AssetChecksDefinition]]:
    """Every source's graph by name, all assets and all checks of a code location."""
    graphs = {spec.name: source_graph(spec) for spec in sources}
    assets = [a for g in graphs.values() for a in g.assets()]
    every_rows = [g.stages["catalog"] for g in graphs.values()]
    assets += [factory.stage_asset(EPISODE_CATALOG, deps=every_rows), selection_lerobot_export]
    assets.append(factory.stage_asset(DUPLICATES, deps=every_rows))
    checks = [c for g in graphs.values() for c in g.checks]
    for check in (export_check, croissant_check):
        named = check(lambda context: context.partition_key)  # the selection's name
        checks.append(factory.check_asset(named, selection_lerobot_export))
    return graphs, assets, checks


GRAPHS, ALL_ASSETS, ALL_CHECKS = build_graph(SOURCE_ASSETS)


def stage_asset(source: str, stage: str) -> dg.AssetsDefinition:
    """The asset of ``stage`` of ``source`` (``stage_asset("atari", "ted")``)."""
    return GRAPHS[source].stages[stage]
