"""Open X-Embodiment: RLDS shards or WebDataset tars -> decoded episodes (TED and catalog come
from factories).

Its resource, ``OpenXSource``: the official RLDS bucket, the hub repack, or a folder of either.
"""

import dagster as dg

from assets import versions
from assets.results import built_result, decoded_result
from assets.sources.spec import OpenXFormat, SourceAssets, SourceMode, SourceResource
from assets.stage import Stage, StageRun
from episode_warehouse.incremental import Built
from episode_warehouse.partition_keys import dataset_of
from episode_warehouse.sources.openx.datasets import RATES_SETTING, parse_rate_setting
from episode_warehouse.sources.openx.fingerprints import openx_fingerprints
from episode_warehouse.sources.openx.mirror import MODES
from episode_warehouse.sources.openx.raw import LAYOUTS, mirror_openx
from episode_warehouse.sources.openx.record import RldsRawRecord, ShardsRawRecord
from episode_warehouse.sources.openx.rlds.listing import parse_version_pins
from episode_warehouse.sources.openx.shard_ranges import SETTING, parse_range_setting
from episode_warehouse.sources.openx.stage import decode_openx
from episode_warehouse.storage import Root
from resources.settings import setting

DEFAULT_OPENX_URL = "gs://gresearch/robotics"


class OpenXSource(SourceResource):
    """``OPENX_URL``: ``gs://gresearch/robotics`` (the default: RLDS folders as published),
    ``hf://datasets/OWNER/REPO[@rev]`` (the WebDataset repack) or a folder of either;
    ``OPENX_FORMAT`` (auto, rlds, webdataset); ``OPENX_VERSIONS`` pins RLDS versions
    (``bridge=0.1.0,...``; else the newest is read); ``OPENX_SHARD_RANGES`` (``droid=32``) lists
    a dataset as partitions of that many shards (``droid@00000-00031`` ...);
    ``OPENX_CONTROL_HZ`` (``my_robot=10``) states the rate of datasets the OXE table of rates
    does not know; ``OPENX_MODE``:
    ``download`` mirrors the shards under the warehouse root first, ``streaming`` decodes
    straight from the source. Requests are bounded by ``OPENX_TIMEOUT_S`` (60);
    ``STORAGE_EMULATOR_HOST`` points GCS at an emulator."""

    url: str | None = None
    mode: SourceMode | None = None
    format: OpenXFormat | None = None
    versions: str | None = None
    shard_ranges: str | None = None
    control_hz: str | None = None

    def source_url(self) -> str:
        return setting(self.url, "OPENX_URL", DEFAULT_OPENX_URL)

    def source_mode(self) -> str:
        return self.chosen("mode", "OPENX_MODE", "download", MODES)

    def layout(self) -> str:
        return self.chosen("format", "OPENX_FORMAT", "auto", LAYOUTS)

    def version_pins(self) -> dict[str, str]:
        return parse_version_pins(setting(self.versions, "OPENX_VERSIONS", ""))

    def control_rate(self, key: str) -> float | None:
        """The rate ``OPENX_CONTROL_HZ`` (``my_robot=10``) states for ``key``'s dataset, if
        any: for datasets the OXE table of rates does not know (their fps is otherwise empty,
        and a LeRobot export of them refused)."""
        rates = parse_rate_setting(setting(self.control_hz, RATES_SETTING, ""))
        return rates.get(dataset_of(key))

    def range_sizes(self) -> dict[str, int]:
        """``OPENX_SHARD_RANGES`` (``droid=32``): the datasets the sensor lists as shard ranges
        of that many shards (``droid@00000-00031`` ...), one partition each."""
        return parse_range_setting(setting(self.shard_ranges, SETTING, ""))

    def mirror(
        self, root: Root, dataset: str, target, code_version: str
    ) -> Built[ShardsRawRecord] | Built[RldsRawRecord]:
        """The raw stage of ``dataset``, in the layout the source holds it."""
        return mirror_openx(
            self.source_url(),
            dataset,
            target,
            root=root,
            code_version=code_version,
            mode=self.source_mode(),
            layout=self.layout(),
            versions=self.version_pins(),
            endpoint=self.endpoint(),
            policy=self.policy("OPENX_TIMEOUT_S"),
        )


openx_datasets = dg.DynamicPartitionsDefinition(name="openx_datasets")


def mirror_shards(stage: StageRun) -> dg.MaterializeResult:
    dataset, openx_source, warehouse = stage.key, stage.source, stage.warehouse
    # Idempotent: shards whose version matches the published record are linked, not copied.
    layout = warehouse.layout()
    target = layout.raw_dir("openx", dataset)
    built = openx_source.mirror(layout.root, dataset, target, stage.code_version)
    meta = built.meta
    return built_result(
        built,
        target,
        source_url=meta.source_url,
        layout="rlds" if isinstance(meta, RldsRawRecord) else "webdataset",
        mode=meta.mode,
        revision=meta.revision,
        shards=len(meta.shards),
        bytes=sum(s["size"] for s in meta.shards.values()),
        copied=meta.copied if built.rebuilt else 0,
        shard_versions=dg.MetadataValue.json(meta.shards),
    )


def decode_episodes(stage: StageRun) -> dg.MaterializeResult:
    dataset, layout = stage.key, stage.warehouse.layout()
    # Idempotent: rebuilt only when the shards or this code version changed.
    built = decode_openx(layout, dataset, endpoint=stage.source.endpoint(),
                         fps=stage.source.control_rate(dataset), **stage.decode_args())  # fmt: skip
    return decoded_result(
        built,
        layout.decoded_dir("openx", dataset),
        tasks=len(built.meta.tasks),
        shards=len(built.meta.extra.get("shards", {})),
        shards_copied=built.meta.extra.get("reused_shards", 0),  # unchanged since last build
        keys=dg.MetadataValue.json(built.meta.arrays),
    )


ASSETS = SourceAssets(
    name="openx",
    partitions=openx_datasets,
    files=Stage(
        "openx_shards",
        mirror_shards,
        "The shards of one OpenX dataset (an RLDS version folder, or WebDataset tars): mirrored "
        "(download) or listed (streaming).",
        {"gcs", "tfrecord", "huggingface", "tar"},
        versions.OPENX_SHARDS,
    ),
    episodes=Stage(
        "openx_episodes",
        decode_episodes,
        "Steps of every episode of one OpenX dataset: images decoded, records parsed from "
        "features.json (RLDS) or pickles unpickled safely (WebDataset).",
        {"numpy"},
        versions.OPENX_EPISODES,
    ),
    resource_key="openx_source",
    resource=OpenXSource(),
    listing=lambda openx_source: openx_fingerprints(
        openx_source.source_url(),
        openx_source.endpoint(),
        ranges=openx_source.range_sizes(),
        pins=openx_source.version_pins(),
    ),
    sensor_description="Lists OPENX_URL; adds new dataset folders (RLDS version folders or "
    "WebDataset tars) as partitions, the datasets OPENX_SHARD_RANGES names as shard ranges "
    "(droid@00000-00031 ...), and requests openx_shards for each partition whose files "
    "appeared or changed.",
    pod={"requests": {"cpu": "4", "memory": "16Gi"}, "limits": {"memory": "24Gi"}},
)
