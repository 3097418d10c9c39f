"""The warehouse's own storage: the folder every artifact lives in, and local scratch space."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from episode_warehouse.atomic import ensure_writable_dir
from episode_warehouse.limits import LIMITS_ENV, InputLimits
from episode_warehouse.paths import DEFAULT_ROOT, ROOT_ENV, WarehouseLayout
from episode_warehouse.workers import default_processes
from resources.settings import setting

SCRATCH_ENV = "EPISODE_WAREHOUSE_SCRATCH"


class WarehouseStorage(dg.ConfigurableResource):
    """Where artifacts live (``EPISODE_WAREHOUSE_ROOT``, default ``./warehouse-data``), where
    temporary files go (``EPISODE_WAREHOUSE_SCRATCH``: PNG frames of exports; default
    ``/dev/shm`` when it has room, else beside the artifact), the limits on untrusted input
    (``EPISODE_WAREHOUSE_LIMITS``), and how many processes stages use.

    ``export_workers``: processes writing PNG frames while the run's process feeds lerobot's
    writer; default the cores it leaves free (one keeps up with 84x84 Atari frames; two on two
    cores measured 0.9x of one, docs/benchmarks.md), at most 8.
    """

    root: str | None = None
    scratch: str | None = None
    limits: str | None = None
    workers: int = 2
    export_workers: int | None = None

    def layout(self) -> WarehouseLayout:
        layout = WarehouseLayout.from_root(setting(self.root, ROOT_ENV, DEFAULT_ROOT))
        ensure_writable_dir(layout.root, "warehouse root (EPISODE_WAREHOUSE_ROOT)")
        return layout

    def scratch_dir(self) -> Path | None:
        value = setting(self.scratch, SCRATCH_ENV, "")
        if not value:
            return None
        return ensure_writable_dir(Path(value).expanduser(), "scratch", SCRATCH_ENV)

    def input_limits(self) -> InputLimits:
        """Bounds on untrusted input (``EPISODE_WAREHOUSE_LIMITS``, docs/reliability.md)."""
        return InputLimits.parse(setting(self.limits, LIMITS_ENV, ""))

    def export_processes(self) -> int:
        return self.export_workers or default_processes(reserve=1)
