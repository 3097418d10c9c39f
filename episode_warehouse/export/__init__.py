"""LeRobot v3 exports of TED partitions and of catalog selections."""

from __future__ import annotations

from typing import TYPE_CHECKING

from episode_warehouse.export.request import ExportRequest

if TYPE_CHECKING:
    from episode_warehouse.export.lerobot import export_lerobot

__all__ = ["ExportRequest", "export_lerobot"]


def __getattr__(name: str):
    # Lazy, so that `python -m episode_warehouse.export.png_writer` workers import only numpy.
    if name == "export_lerobot":
        from episode_warehouse.export import lerobot

        return getattr(lerobot, name)
    raise AttributeError(name)
