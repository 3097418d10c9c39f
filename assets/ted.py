"""TED memmaps: one stage per source (``assets/stage.py`` makes it an asset)."""

import dagster as dg

from assets import versions
from assets.results import built_result
from assets.stage import Stage, StageRun


def picture_metadata(target) -> dict:
    """Return/length histograms and first frames of a few episodes, as inline PNGs."""
    from episode_warehouse.report.plots import markdown_image
    from episode_warehouse.report.ted_report import read_ted_report

    alt = {"distributions": "return and length", "first_frames": "first frames"}
    return {
        name: dg.MetadataValue.md(markdown_image(png, alt[name]))
        for name, png in read_ted_report(target).items()
    }


def ted_stage(source: str, group: str) -> Stage:
    def run(stage: StageRun) -> dg.MaterializeResult:
        # Idempotent: rebuilt only when the decoded episodes or this code version changed;
        # validated in staging, so a TED that fails its checks is never published.
        from episode_warehouse.catalog.rows import folder_bytes
        from episode_warehouse.stages.ted import build_ted_stage

        layout = stage.warehouse.layout()
        built = build_ted_stage(layout, source, stage.key, code_version=stage.code_version)
        target = layout.ted_dir(source, stage.key)
        return built_result(
            built,
            target,
            **picture_metadata(target),
            **stage.settings.viewer_link(layout.url, source, stage.key),
            frames=built.meta.rows,
            episodes=built.meta.episodes,
            bytes_on_disk=folder_bytes(target),
            keys=dg.MetadataValue.json(sorted(built.meta.keys)),
            load_with=dg.MetadataValue.md(
                f"```python\nfrom episode_warehouse import open_ted\n"
                f"td = open_ted({source!r}, {stage.key!r})\n```"
            ),
        )

    return Stage(
        f"{source}_ted",
        run,
        f"TorchRL TED memmap of one {source} partition: frames stored once, ('next', "
        "'observation') a shifted view; load with episode_warehouse.open_ted.",
        {"torch", "numpy"},
        versions.TED,
        group=group,
    )
