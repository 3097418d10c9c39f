"""Standardized partitions (Octo/OpenVLA action, state, views, instruction) and their
statistics, a stage per source (``assets/stage.py`` makes it an asset)."""

import dagster as dg

from assets import versions
from assets.results import built_result
from assets.stage import Stage, StageRun


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


def standardized_stage(source: str) -> Stage:
    def run(stage: StageRun) -> dg.MaterializeResult:
        # Idempotent: rebuilt when the TED, the transforms' version or the mapping changed.
        from episode_warehouse.catalog.rows import folder_bytes
        from episode_warehouse.standardized.stage import build_standardized_stage

        layout = stage.warehouse.layout()
        built = build_standardized_stage(layout, source, stage.key, code_version=stage.code_version)
        target, meta = layout.standardized_dir(source, stage.key), built.meta
        return built_result(
            built,
            target,
            **statistics_metadata(target),
            steps=meta.rows,
            episodes=meta.episodes,
            dropped_episodes=meta.dropped_episodes,
            action_dim=meta.action_dim,
            state_dim=meta.state_dim,
            views=dg.MetadataValue.json(meta.views),
            bytes_on_disk=folder_bytes(target),
            load_with=dg.MetadataValue.md(
                "```python\nfrom episode_warehouse.standardized import open_standardized\n"
                f"td = open_standardized({source!r}, {stage.key!r})\n```"
            ),
        )

    return Stage(
        f"{source}_standardized",
        run,
        f"A {source} partition standardized as Octo/OpenVLA train on it (7-D action, proprio "
        "state, primary/secondary/wrist views, instruction) with its dataset_statistics.json; "
        "OXE datasets by Octo's transforms, others by a declared mapping. Load with "
        "episode_warehouse.standardized.",
        {"numpy"},
        versions.STANDARDIZED,
        group="standardized",
        eager=False,
    )
