"""Standardized partitions (Octo/OpenVLA action, state, views, instruction) and their
statistics, one asset per source built by the same factory."""

import dagster as dg

from assets import versions
from assets.retries import only_transient_retries
from resources import WarehouseStorage


def statistics_metadata(folder) -> dict:
    """The partition's Octo statistics as JSON and a plot."""
    import json

    from episode_warehouse.report.plots import markdown_image, statistics_png
    from episode_warehouse.standardized.statistics import STATISTICS_FILE

    (stats,) = json.loads((folder / STATISTICS_FILE).read_text()).values()
    return {
        "dataset_statistics": dg.MetadataValue.json(stats),
        "statistics_plot": dg.MetadataValue.md(markdown_image(statistics_png(stats), "stats")),
    }


def standardized_asset(
    source: str,
    partitions_def: dg.PartitionsDefinition,
    ted: dg.AssetsDefinition,
) -> dg.AssetsDefinition:
    @dg.asset(
        name=f"{source}_standardized",
        partitions_def=partitions_def,
        deps=[ted],
        group_name="standardized",
        kinds={"numpy"},
        code_version=versions.STANDARDIZED,
        owners=["team:data-platform"],
        description=f"A {source} partition standardized as Octo/OpenVLA train on it (7-D action, "
        "proprio state, primary/secondary/wrist views, instruction) with its "
        "dataset_statistics.json; OXE datasets by Octo's transforms, others by a declared "
        "mapping. Load with episode_warehouse.standardized.",
    )
    def _standardized(
        context: dg.AssetExecutionContext, warehouse: WarehouseStorage
    ) -> dg.MaterializeResult:
        # Idempotent: rebuilt when the TED, the transforms' version or the mapping changed.
        with only_transient_retries(context):
            from episode_warehouse.catalog.rows import folder_bytes
            from episode_warehouse.standardized.stage import build_standardized_stage

            key = context.partition_key
            layout = warehouse.layout()
            built = build_standardized_stage(layout, source, key, code_version=versions.of(context))
            target = layout.standardized_dir(source, key)
            meta = built.meta
            return dg.MaterializeResult(
                metadata={
                    **statistics_metadata(target),
                    "steps": meta.rows,
                    "episodes": meta.episodes,
                    "dropped_episodes": meta.dropped_episodes,
                    "action_dim": meta.action_dim,
                    "state_dim": meta.state_dim,
                    "views": dg.MetadataValue.json(meta.views),
                    "bytes_on_disk": folder_bytes(target),
                    "rebuilt": built.rebuilt,
                    "path": dg.MetadataValue.path(str(target)),
                    "load_with": dg.MetadataValue.md(
                        "```python\nfrom episode_warehouse.standardized import open_standardized\n"
                        f"td = open_standardized({source!r}, {key!r})\n```"
                    ),
                },
                data_version=dg.DataVersion(built.version),
            )

    return _standardized
