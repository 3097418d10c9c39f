"""The warehouse's own storage: the folder every artifact lives in."""

from __future__ import annotations

import dagster as dg

from episode_warehouse.atomic import ensure_writable_dir
from episode_warehouse.catalog import CatalogStore
from episode_warehouse.paths import WarehouseLayout


class WarehouseStorage(dg.ConfigurableResource):
    """Where artifacts live (``EPISODE_WAREHOUSE_ROOT``) and how many processes stages use."""

    root: str
    workers: int = 2
    # LeRobot exports: 1 process. Two processes joined by lerobot's aggregate_datasets measured
    # 0.47x of one at 12k frames (docs/benchmarks.md): aggregation costs as much as writing.
    export_workers: int = 1

    def layout(self) -> WarehouseLayout:
        layout = WarehouseLayout.from_root(self.root)
        ensure_writable_dir(layout.root, "warehouse root (EPISODE_WAREHOUSE_ROOT)")
        return layout

    def catalog(self) -> CatalogStore:
        return CatalogStore(self.layout().catalog_dir)
