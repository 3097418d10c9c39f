"""The warehouse's own storage: where every artifact lives (the root), and where a ``gs://``
root's local copy is built."""

from __future__ import annotations

import dagster as dg

from episode_warehouse.atomic import ensure_writable_dir
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.settings import ROOT_ENV, Settings
from resources.worker import record_worker


class WarehouseStorage(dg.ConfigurableResource):
    """Where artifacts live (``EPISODE_WAREHOUSE_ROOT``, default ``./warehouse-data``) and where
    a ``gs://`` root's local copy is built (``EPISODE_WAREHOUSE_LOCAL_COPY``, default the
    system's temporary folder). How a run works (scratch, limits, processes, the viewer's URL)
    is :class:`~resources.run_settings.RunSettings`'.
    """

    root: str | None = None
    local_copy: str | None = None

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        """On a cluster worker, record the worker in the run's tags (run monitoring asks it
        whether it is alive; the UI shows where each run ran)."""
        record_worker(context)

    def settings(self) -> Settings:
        """The domain package's settings: this resource's explicit values, else the
        environment's (``episode_warehouse.settings``), resolved now."""
        return Settings.from_env(root=self.root, local_copy=self.local_copy)

    def layout(self) -> WarehouseLayout:
        """The writer's layout (a bucket root's local copy bound)."""
        layout = WarehouseLayout.from_settings(self.settings())
        ensure_writable_dir(layout.folder, f"warehouse root ({ROOT_ENV})")
        return layout
