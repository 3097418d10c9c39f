"""The warehouse's own storage: the folder every artifact lives in, and local scratch space."""

from __future__ import annotations

import shlex
from pathlib import Path

import dagster as dg

from episode_warehouse.atomic import ensure_writable_dir
from episode_warehouse.limits import LIMITS_ENV, InputLimits
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.settings import ROOT_ENV, Settings
from episode_warehouse.viewer.links import DEFAULT_URL, VIEWER_URL_ENV, partition_url
from episode_warehouse.workers import default_processes
from resources.settings import setting
from resources.worker import record_worker

SCRATCH_ENV = "EPISODE_WAREHOUSE_SCRATCH"
WORKERS_ENV = "EPISODE_WAREHOUSE_WORKERS"


class WarehouseStorage(dg.ConfigurableResource):
    """Where artifacts live (``EPISODE_WAREHOUSE_ROOT``, default ``./warehouse-data``), where a
    ``gs://`` root's local copy is built (``EPISODE_WAREHOUSE_LOCAL_COPY``, default the system's
    temporary folder), where an export's PNG frames wait for lerobot (``EPISODE_WAREHOUSE_SCRATCH``;
    default ``/dev/shm`` when it has room, else beside the export), the limits on untrusted input
    (``EPISODE_WAREHOUSE_LIMITS``), how many processes stages use, and the episode viewer's URL
    (``EPISODE_WAREHOUSE_VIEWER_URL``; TED and catalog materializations link to it).

    ``export_workers``: processes writing PNG frames while the run's process feeds lerobot's
    writer; default the cores it leaves free (one keeps up with 84x84 Atari frames; two on two
    cores measured 0.9x of one, docs/benchmarks.md), at most 8.
    """

    root: str | None = None
    local_copy: str | None = None
    scratch: str | None = None
    limits: str | None = None
    workers: int | None = None
    export_workers: int | None = None
    viewer_url: str | None = None

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        """On a cluster worker, record the worker in the run's tags (run monitoring asks it
        whether it is alive; the UI shows where each run ran)."""
        record_worker(context)

    def settings(self) -> Settings:
        """The domain package's settings: this resource's explicit values, else the
        environment's (``episode_warehouse.settings``), resolved now."""
        return Settings.from_env(root=self.root, local_copy=self.local_copy)

    def viewer_link(self, source: str, partition: str) -> dict:
        """``{"viewer": URL}`` of the partition's page: on the viewer that runs
        (``EPISODE_WAREHOUSE_VIEWER_URL``, which ``warehouse ui`` sets), else on the default one
        (``http://127.0.0.1:8787``, where ``warehouse view`` or ``warehouse ui`` serve it), with
        the command that starts it (a headless run, such as the demo's, has links too)."""
        base = setting(self.viewer_url, VIEWER_URL_ENV, "")
        link = {
            "viewer": dg.MetadataValue.url(partition_url(base or DEFAULT_URL, source, partition))
        }
        if base:
            return link
        return {**link, "viewer_start": f"./warehouse view --root {shlex.quote(self.layout().url)}"}

    def layout(self) -> WarehouseLayout:
        layout = WarehouseLayout.from_settings(self.settings())
        ensure_writable_dir(layout.folder, f"warehouse root ({ROOT_ENV})")
        return layout

    def scratch_dir(self) -> Path | None:
        value = setting(self.scratch, SCRATCH_ENV, "")
        if not value:
            return None
        return ensure_writable_dir(Path(value).expanduser(), "scratch", SCRATCH_ENV)

    def input_limits(self) -> InputLimits:
        """Bounds on untrusted input (``EPISODE_WAREHOUSE_LIMITS``, docs/reliability.md)."""
        return InputLimits.parse(setting(self.limits, LIMITS_ENV, ""))

    def decode_processes(self) -> int:
        """Processes a stage decodes with (``EPISODE_WAREHOUSE_WORKERS``, default 2; the local
        cluster sets cores / workers, so that its workers share the machine's cores)."""
        return setting(self.workers, WORKERS_ENV, 2, cast=int)

    def export_processes(self) -> int:
        return self.export_workers or default_processes(reserve=1)
