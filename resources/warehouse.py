"""The warehouse's own storage: the folder every artifact lives in."""

from __future__ import annotations

import os

import dagster as dg

from episode_warehouse.atomic import ensure_writable_dir
from episode_warehouse.catalog import CatalogStore
from episode_warehouse.paths import WarehouseLayout


class WarehouseStorage(dg.ConfigurableResource):
    """Where artifacts live (``EPISODE_WAREHOUSE_ROOT``) and how many processes stages use."""

    root: str
    workers: int = 2
    # LeRobot exports: processes writing PNG frames while the run's process feeds lerobot's
    # writer: the cores it leaves free (one keeps up with 84x84 Atari frames; two on two cores
    # measured 0.9x of one, docs/benchmarks.md), at most 8.
    export_workers: int = max(1, min(8, (os.cpu_count() or 2) - 1))

    def layout(self) -> WarehouseLayout:
        layout = WarehouseLayout.from_root(self.root)
        ensure_writable_dir(layout.root, "warehouse root (EPISODE_WAREHOUSE_ROOT)")
        return layout

    def catalog(self) -> CatalogStore:
        return CatalogStore(self.layout().catalog_dir)
