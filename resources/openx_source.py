"""The OpenX-Embodiment source: the jxu124 mirror on the hub, or a local folder like it."""

from __future__ import annotations

from enum import Enum

import dagster as dg

from episode_warehouse.sources.openx.mirror import MODES
from episode_warehouse.sources.openx.shards import ShardListing, list_shards
from resources.settings import setting

DEFAULT_OPENX_URL = "hf://datasets/jxu124/OpenX-Embodiment"


class Mode(Enum):
    """``download`` mirrors the shards first; ``streaming`` decodes from the source."""

    download = "download"
    streaming = "streaming"


class OpenXSource(dg.ConfigurableResource):
    """``OPENX_URL`` (``hf://datasets/OWNER/REPO[@rev]`` or a folder of ``<dataset>/*.tar``)
    and ``OPENX_MODE``: ``download`` mirrors the shards under the warehouse root first,
    ``streaming`` decodes straight from the source without keeping a raw copy."""

    url: str | None = None
    mode: Mode | None = None

    def source_url(self) -> str:
        return setting(self.url, "OPENX_URL", DEFAULT_OPENX_URL)

    def source_mode(self) -> str:
        chosen = self.mode.value if self.mode is not None else None
        return setting(chosen, "OPENX_MODE", "download", choices=MODES)

    def shards(self, dataset: str) -> ShardListing:
        return list_shards(self.source_url(), dataset)
