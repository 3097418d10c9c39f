"""Dagster resources: one per external system, configured from environment variables."""

from resources.atari_replay import AtariReplaySource
from resources.env import build_resources
from resources.openx_source import OpenXSource
from resources.warehouse import WarehouseStorage

__all__ = ["AtariReplaySource", "OpenXSource", "WarehouseStorage", "build_resources"]
