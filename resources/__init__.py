"""Dagster resources: one per external system, resolved from environment variables at run start."""

from resources.atari_replay import AtariReplaySource
from resources.hub import HubDestination
from resources.lerobot_source import LeRobotSource
from resources.openx_source import OpenXSource
from resources.warehouse import WarehouseStorage

__all__ = [
    "AtariReplaySource",
    "HubDestination",
    "LeRobotSource",
    "OpenXSource",
    "WarehouseStorage",
    "build_resources",
]


def build_resources() -> dict:
    """The resources of the code location, keyed as the assets ask for them: the warehouse's
    storage, the hub as a destination, and each registered source's own (its ``SourceAssets``
    declares it). No value is read here: each is resolved when a run starts."""
    from assets.sources import SOURCE_ASSETS  # the sources' modules import this package

    return {
        "warehouse": WarehouseStorage(),
        **{spec.resource_key: spec.resource for spec in SOURCE_ASSETS},
        "hub": HubDestination(),
    }
