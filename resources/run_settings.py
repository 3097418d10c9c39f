"""How a run works, apart from where it stores: its scratch space, the limits on untrusted input,
how many processes its stages use, and the episode viewer its results link to."""

from __future__ import annotations

import shlex
from pathlib import Path

import dagster as dg

from episode_warehouse.atomic import ensure_writable_dir
from episode_warehouse.limits import LIMITS_ENV, InputLimits
from episode_warehouse.viewer.links import DEFAULT_URL, VIEWER_URL_ENV, partition_url
from episode_warehouse.workers import default_processes
from resources.settings import setting

SCRATCH_ENV = "EPISODE_WAREHOUSE_SCRATCH"
WORKERS_ENV = "EPISODE_WAREHOUSE_WORKERS"


class RunSettings(dg.ConfigurableResource):
    """Where an export's PNG frames wait for lerobot (``EPISODE_WAREHOUSE_SCRATCH``; default
    ``/dev/shm`` when it has room, else beside the export), the limits on untrusted input
    (``EPISODE_WAREHOUSE_LIMITS``), how many processes stages use, and the episode viewer's URL
    (``EPISODE_WAREHOUSE_VIEWER_URL``; TED and catalog materializations link to it).

    ``export_workers``: processes writing PNG frames while the run's process feeds lerobot's
    writer; default the cores it leaves free (one keeps up with 84x84 Atari frames; two on two
    cores measured 0.9x of one, docs/benchmarks.md), at most 8.
    """

    scratch: str | None = None
    limits: str | None = None
    workers: int | None = None
    export_workers: int | None = None
    viewer_url: str | None = None

    def viewer_link(self, root_url: str, source: str, partition: str) -> dict:
        """``{"viewer": URL}`` of the partition's page: on the viewer that runs
        (``EPISODE_WAREHOUSE_VIEWER_URL``, which ``warehouse ui`` sets), else on the default one
        (``http://127.0.0.1:8787``, where ``warehouse view`` or ``warehouse ui`` serve it), with
        the command that starts it over ``root_url`` (a headless run, such as the demo's, has
        links too)."""
        base = setting(self.viewer_url, VIEWER_URL_ENV, "")
        link = {
            "viewer": dg.MetadataValue.url(partition_url(base or DEFAULT_URL, source, partition))
        }
        if base:
            return link
        return {**link, "viewer_start": f"./warehouse view --root {shlex.quote(root_url)}"}

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
