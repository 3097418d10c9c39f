"""The Open X-Embodiment source: the official RLDS bucket, the hub repack, or a folder of either."""

from __future__ import annotations

from enum import Enum

import dagster as dg

from episode_warehouse.gcs import EMULATOR_ENV
from episode_warehouse.incremental import Built
from episode_warehouse.retry import RetryPolicy
from episode_warehouse.sources.openx.mirror import MODES
from episode_warehouse.sources.openx.raw import LAYOUTS, mirror_openx
from episode_warehouse.sources.openx.record import RldsRawRecord, ShardsRawRecord
from episode_warehouse.sources.openx.rlds.listing import parse_version_pins
from episode_warehouse.storage import Root
from resources.settings import setting

DEFAULT_OPENX_URL = "gs://gresearch/robotics"


class Mode(Enum):
    """``download`` mirrors the shards first; ``streaming`` decodes from the source."""

    download = "download"
    streaming = "streaming"


class Format(Enum):
    """``auto`` tells the layouts apart per dataset from the listing."""

    auto = "auto"
    rlds = "rlds"
    webdataset = "webdataset"


class OpenXSource(dg.ConfigurableResource):
    """``OPENX_URL``: ``gs://gresearch/robotics`` (the default: RLDS folders as published),
    ``hf://datasets/OWNER/REPO[@rev]`` (the WebDataset repack) or a folder of either;
    ``OPENX_FORMAT`` (auto, rlds, webdataset); ``OPENX_VERSIONS`` pins RLDS versions
    (``bridge=0.1.0,...``; else the newest is read); ``OPENX_MODE``: ``download`` mirrors the
    shards under the warehouse root first, ``streaming`` decodes straight from the source.
    Requests are bounded by ``OPENX_TIMEOUT_S`` (60); ``STORAGE_EMULATOR_HOST`` points GCS at an
    emulator."""

    url: str | None = None
    mode: Mode | None = None
    format: Format | None = None
    versions: str | None = None
    timeout_s: int | None = None
    emulator_host: str | None = None
    attempts: int = 6

    def source_url(self) -> str:
        return setting(self.url, "OPENX_URL", DEFAULT_OPENX_URL)

    def source_mode(self) -> str:
        chosen = self.mode.value if self.mode is not None else None
        return setting(chosen, "OPENX_MODE", "download", choices=MODES)

    def layout(self) -> str:
        chosen = self.format.value if self.format is not None else None
        return setting(chosen, "OPENX_FORMAT", "auto", choices=LAYOUTS)

    def version_pins(self) -> dict[str, str]:
        return parse_version_pins(setting(self.versions, "OPENX_VERSIONS", ""))

    def endpoint(self) -> str | None:
        return setting(self.emulator_host, EMULATOR_ENV, "") or None

    def mirror(
        self, root: Root, dataset: str, target, code_version: str
    ) -> Built[ShardsRawRecord] | Built[RldsRawRecord]:
        """The raw stage of ``dataset``, in the layout the source holds it."""
        timeout = setting(self.timeout_s, "OPENX_TIMEOUT_S", 60, cast=int)
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
            policy=RetryPolicy(attempts=self.attempts, timeout_s=timeout),
        )
