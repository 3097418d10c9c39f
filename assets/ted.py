"""TED memmaps, one asset per source built by the same factory."""

import dagster as dg

from assets import versions
from assets.stage import build_stage, published_meta
from episode_warehouse.catalog.rows import folder_bytes
from episode_warehouse.decoded import open_decoded
from episode_warehouse.ted import build_ted
from resources import WarehouseStorage


def picture_metadata(target) -> dict:
    """Return/length histograms and first frames of a few episodes, as inline PNGs."""
    from episode_warehouse.report.plots import markdown_image
    from episode_warehouse.report.ted_report import read_ted_report

    alt = {"distributions": "return and length", "first_frames": "first frames"}
    return {
        name: dg.MetadataValue.md(markdown_image(png, alt[name]))
        for name, png in read_ted_report(target).items()
    }


def _build_with_report(episodes, tmp) -> dict:
    from episode_warehouse.report.ted_report import write_ted_report

    meta = build_ted(episodes, tmp)
    write_ted_report(tmp)
    return meta


def ted_asset(
    source: str, partitions_def: dg.PartitionsDefinition, decoded: dg.AssetsDefinition
) -> dg.AssetsDefinition:
    @dg.asset(
        name=f"{source}_ted",
        partitions_def=partitions_def,
        deps=[decoded],
        group_name=source,
        kinds={"torch", "numpy"},
        code_version=versions.TED,
        automation_condition=dg.AutomationCondition.eager(),
        owners=["team:data-platform"],
        description=f"TorchRL TED memmap of one {source} partition: frames stored once, "
        "('next', 'observation') a shifted view; load with episode_warehouse.open_ted.",
    )
    def _ted(
        context: dg.AssetExecutionContext, warehouse: WarehouseStorage
    ) -> dg.MaterializeResult:
        # Idempotent: rebuilt only when the decoded episodes or this code version changed.
        key = context.partition_key
        layout = warehouse.layout()
        decoded_dir = layout.decoded_dir(source, key)
        episodes = open_decoded(decoded_dir)
        built_from = {
            "decoded": published_meta(decoded_dir).get("built_from"),
            "code_version": versions.TED,
        }
        target = layout.ted_dir(source, key)
        meta, rebuilt = build_stage(
            target, built_from, lambda tmp: _build_with_report(episodes, tmp)
        )
        on_disk = folder_bytes(target)
        return dg.MaterializeResult(
            metadata={
                **picture_metadata(target),
                "frames": meta["rows"],
                "episodes": meta["episodes"],
                "bytes_on_disk": on_disk,
                "keys": dg.MetadataValue.json(sorted(meta["keys"])),
                "rebuilt": rebuilt,
                "path": dg.MetadataValue.path(str(target)),
                "load_with": dg.MetadataValue.md(
                    f"```python\nfrom episode_warehouse import open_ted\n"
                    f"td = open_ted({source!r}, {key!r})\n```"
                ),
            }
        )

    return _ted
