"""TED memmaps, one asset per source built by the same factory."""

import dagster as dg

from assets import versions
from assets.retries import only_transient_retries
from resources import RunSettings, WarehouseStorage


def picture_metadata(target) -> dict:
    """Return/length histograms and first frames of a few episodes, as inline PNGs."""
    from episode_warehouse.report.plots import markdown_image
    from episode_warehouse.report.ted_report import read_ted_report

    alt = {"distributions": "return and length", "first_frames": "first frames"}
    return {
        name: dg.MetadataValue.md(markdown_image(png, alt[name]))
        for name, png in read_ted_report(target).items()
    }


def ted_asset(
    source: str,
    partitions_def: dg.PartitionsDefinition,
    decoded: dg.AssetsDefinition,
    group: str | None = None,
) -> dg.AssetsDefinition:
    @dg.asset(
        name=f"{source}_ted",
        partitions_def=partitions_def,
        deps=[decoded],
        group_name=group or source,
        kinds={"torch", "numpy"},
        code_version=versions.TED,
        automation_condition=dg.AutomationCondition.eager(),
        owners=["team:data-platform"],
        description=f"TorchRL TED memmap of one {source} partition: frames stored once, "
        "('next', 'observation') a shifted view; load with episode_warehouse.open_ted.",
    )
    def _ted(
        context: dg.AssetExecutionContext, warehouse: WarehouseStorage, run_settings: RunSettings
    ) -> dg.MaterializeResult:
        # Idempotent: rebuilt only when the decoded episodes or this code version changed;
        # validated in staging, so a TED that fails its checks is never published.
        with only_transient_retries(context):
            from episode_warehouse.catalog.rows import folder_bytes
            from episode_warehouse.stages.ted import build_ted_stage

            key = context.partition_key
            layout = warehouse.layout()
            built = build_ted_stage(layout, source, key, code_version=versions.of(context))
            target = layout.ted_dir(source, key)
            return dg.MaterializeResult(
                metadata={
                    **picture_metadata(target),
                    **run_settings.viewer_link(layout.url, source, key),
                    "frames": built.meta.rows,
                    "episodes": built.meta.episodes,
                    "bytes_on_disk": folder_bytes(target),
                    "keys": dg.MetadataValue.json(sorted(built.meta.keys)),
                    "rebuilt": built.rebuilt,
                    "path": dg.MetadataValue.path(str(target)),
                    "load_with": dg.MetadataValue.md(
                        f"```python\nfrom episode_warehouse import open_ted\n"
                        f"td = open_ted({source!r}, {key!r})\n```"
                    ),
                },
                data_version=dg.DataVersion(built.version),
            )

    return _ted
