"""The OpenX-Embodiment source: the jxu124 mirror on the hub, or a local folder like it."""

from __future__ import annotations

import dagster as dg

from episode_warehouse.openx.shards import ShardListing, list_shards

DEFAULT_OPENX_URL = "hf://datasets/jxu124/OpenX-Embodiment"


class OpenXSource(dg.ConfigurableResource):
    """``OPENX_URL`` (``hf://datasets/OWNER/REPO[@rev]`` or a folder of ``<dataset>/*.tar``)
    and ``OPENX_MODE``: ``download`` mirrors the shards under the warehouse root first,
    ``streaming`` decodes straight from the source without keeping a raw copy."""

    url: str = DEFAULT_OPENX_URL
    mode: str = "download"

    def shards(self, dataset: str) -> ShardListing:
        return list_shards(self.url, dataset)
