"""Dagster resources: one per external system, resolved from environment variables at run start."""

from resources.atari_replay import AtariReplaySource
from resources.hub import HubDestination
from resources.lerobot_source import LeRobotSource
from resources.minari_source import MinariSource
from resources.openx_source import OpenXSource
from resources.warehouse import WarehouseStorage

__all__ = [
    "AtariReplaySource",
    "HubDestination",
    "LeRobotSource",
    "MinariSource",
    "OpenXSource",
    "WarehouseStorage",
    "build_resources",
]


def build_resources() -> dict:
    """The resources of the code location, keyed as the assets ask for them (no value is read
    here: each is resolved when a run starts)."""
    return {
        "warehouse": WarehouseStorage(),
        "atari_replay": AtariReplaySource(),
        "openx_source": OpenXSource(),
        "lerobot_source": LeRobotSource(),
        "minari_source": MinariSource(),
        "hub": HubDestination(),
    }
