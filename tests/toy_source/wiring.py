"""The toy source's wiring: its partitions, its resource and its two assets, then ``ASSETS``."""

from pathlib import Path

import dagster as dg

from assets.results import decoded_result
from assets.sources.spec import SourceAssets
from resources import WarehouseStorage
from tests.toy_source.source import check_key, decode, mirror

toy_partitions = dg.StaticPartitionsDefinition(["walk", "drift"])


class ToySource(dg.ConfigurableResource):
    """Where the toy source's files are (``<folder>/<partition>/episode_<n>.npz``)."""

    folder: str

    def listing(self) -> dict[str, str]:
        return {
            p.name: ",".join(f"{f.name}:{f.stat().st_mtime_ns}" for f in sorted(p.glob("*.npz")))
            for p in sorted(Path(self.folder).iterdir())
            if p.is_dir()
        }


@dg.asset(partitions_def=toy_partitions, group_name="toy", code_version="1")
def toy_files(
    context: dg.AssetExecutionContext, toy_source: ToySource, warehouse: WarehouseStorage
) -> dg.MaterializeResult:
    key = check_key(context.partition_key)
    layout = warehouse.layout()
    built = mirror(
        Path(toy_source.folder), key, layout.raw_dir("toy", key), root=layout.root, code_version="1"
    )
    return dg.MaterializeResult(
        metadata={"files": len(built.meta.files)},
        data_version=dg.DataVersion(built.version),
    )


@dg.asset(partitions_def=toy_partitions, deps=[toy_files], group_name="toy", code_version="1")
def toy_episodes(
    context: dg.AssetExecutionContext, warehouse: WarehouseStorage
) -> dg.MaterializeResult:
    key = check_key(context.partition_key)
    layout = warehouse.layout()
    built = decode(layout, key, code_version="1")
    return decoded_result(built, layout.decoded_dir("toy", key))


ASSETS = SourceAssets(
    name="toy",
    partitions=toy_partitions,
    raw=toy_files,
    decoded=toy_episodes,
    group="toy",
    resource_key="toy_source",
    resource=None,  # each test passes ToySource(folder=...) of its own
    listing=lambda toy_source: toy_source.listing(),
    sensor_description="Lists the toy folder.",
)
