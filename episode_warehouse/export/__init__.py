"""LeRobot v3 exports of TED partitions and of catalog selections."""

from episode_warehouse.export.lerobot import ExportRequest, export_lerobot

__all__ = ["ExportRequest", "export_lerobot"]
