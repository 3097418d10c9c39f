"""The toy source's one Dagster module: its partitions, its resource, its two stages (the
assets are generated from them), then ``ASSETS``."""

from pathlib import Path

import dagster as dg

from assets.results import decoded_result
from assets.sources.spec import SourceAssets
from assets.stage import Stage, StageRun
from tests.toy_source.source import decode, mirror

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


def mirror_files(stage: StageRun) -> dg.MaterializeResult:
    key, toy_source, warehouse = stage.key, stage.source, stage.warehouse
    layout = warehouse.layout()
    built = mirror(
        Path(toy_source.folder), key, layout.raw_dir("toy", key), root=layout.root,
        code_version=stage.code_version,
    )  # fmt: skip
    return dg.MaterializeResult(
        metadata={"files": len(built.meta.files)}, data_version=dg.DataVersion(built.version)
    )


def decode_episodes(stage: StageRun) -> dg.MaterializeResult:
    key, warehouse = stage.key, stage.warehouse
    layout = warehouse.layout()
    built = decode(layout, key, code_version=stage.code_version)
    return decoded_result(built, layout.decoded_dir("toy", key))


ASSETS = SourceAssets(
    name="toy",
    partitions=toy_partitions,
    files=Stage("toy_files", mirror_files, "The toy files of a partition.", {"npz"}, "1"),
    episodes=Stage("toy_episodes", decode_episodes, "The toy episodes.", {"numpy"}, "1"),
    group="toy",
    resource_key="toy_source",
    resource=None,  # each test passes ToySource(folder=...) of its own
    resource_type=ToySource,
    listing=lambda toy_source: toy_source.listing(),
    sensor_description="Lists the toy folder.",
)
