"""The code location's resources: the warehouse's storage, the hub as a destination, and each
registered source's own (its ``SourceAssets`` declares it). Here, above ``resources/``, because
it reads the sources' declarations (``assets.sources``); ``resources/`` imports no asset."""

from __future__ import annotations

from assets.sources import SOURCE_ASSETS
from resources import HubDestination, RunSettings, WarehouseStorage


def build_resources() -> dict:
    """The resources keyed as the assets ask for them. No value is read here: each is
    resolved when a run starts."""
    return {
        "warehouse": WarehouseStorage(),
        "run_settings": RunSettings(),
        **{spec.resource_key: spec.resource for spec in SOURCE_ASSETS},
        "hub": HubDestination(),
    }
