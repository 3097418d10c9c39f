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
]
