"""The Celery app the cluster's workers run: ``dagster_celery``'s, with child processes allowed
and the code location imported before runs fork.

A run's stages start processes of their own (the decode pool, the PNG writers of exports), but
Celery's prefork workers run each task in a daemonic process, and Python refuses children to
daemonic processes ("daemonic processes are not allowed to have children"). Each worker process
runs one task and is then replaced (``worker_max_tasks_per_child = 1``), and a run's own pools
are closed by the run, so lifting the flag leaves nothing behind. Tested by every cluster test
(their runs decode and export with worker processes).
"""

from __future__ import annotations

import multiprocessing

from celery.signals import worker_init, worker_process_init
from dagster_celery.app import app

from warehouse_cli.cluster.private_api import use_stdlib_authkey

__all__ = ["app"]


@worker_process_init.connect
def _allow_child_processes(**_kwargs) -> None:
    process = multiprocessing.current_process()
    process.daemon = False
    use_stdlib_authkey(process)


@worker_init.connect
def _preload_code_location(**_kwargs) -> None:
    """Import the code location once, in the worker's main process: each run's process is forked
    from it with torch, lerobot and the assets already imported, so a run starts in about a
    second instead of loading them again (~13 s on two cores, docs/benchmarks.md). Dagster
    still executes definitions.py for each run; only the imports are shared."""
    import importlib

    importlib.import_module("definitions")
