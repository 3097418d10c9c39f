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

from assets.catalog import catalog_rows_asset, episode_catalog
from assets.checks import croissant_check, export_check, rows_check, ted_check
from assets.curation import duplicates_asset, registered_scores, score_asset
from assets.lerobot import partition_export_asset, selection_lerobot_export
from assets.sources import SOURCE_ASSETS
from assets.sources.spec import SourceAssets
from assets.standardized import standardized_asset
from assets.statistics import statistics_asset
from assets.ted import ted_asset
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
    name, parts = spec.name, spec.partitions
    ted = ted_asset(name, parts, spec.decoded, group=spec.group)
    rows = catalog_rows_asset(name, parts, ted)
    export = partition_export_asset(name, parts, rows)
    standardized = standardized_asset(name, parts, ted)
    checks = [
        ted_check(name, ted),
        rows_check(name, rows),
        *(factory(rows) for factory in spec.row_checks),
        export_check(export, _partition_export_name(name)),
        croissant_check(export, _partition_export_name(name)),
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
        statistics=statistics_asset(name, parts, ted),
        checks=checks,
        scores=[score_asset(name, parts, ted, rows, s) for s in registered_scores()],
    )


def build_graph(
    sources: Iterable[SourceAssets],
) -> tuple[dict[str, SourceGraph], list[dg.AssetsDefinition], list[dg.AssetChecksDefinition]]:
    """Every source's graph by name, all assets and all checks of a code location."""
    graphs = {spec.name: source_graph(spec) for spec in sources}
    assets = [a for g in graphs.values() for a in g.assets()]
    assets += [episode_catalog, selection_lerobot_export]
    assets.append(duplicates_asset([g.stages["catalog"] for g in graphs.values()]))
    checks = [c for g in graphs.values() for c in g.checks]
    checks.append(export_check(selection_lerobot_export, lambda context: context.partition_key))
    checks.append(croissant_check(selection_lerobot_export, lambda context: context.partition_key))
    return graphs, assets, checks


GRAPHS, ALL_ASSETS, ALL_CHECKS = build_graph(SOURCE_ASSETS)


def stage_asset(source: str, stage: str) -> dg.AssetsDefinition:
    """The asset of ``stage`` of ``source`` (``stage_asset("atari", "ted")``)."""
    return GRAPHS[source].stages[stage]
