"""Which cluster worker ran a run: the worker's name comes in ``EPISODE_WAREHOUSE_WORKER``
(``warehouse cluster up`` sets it for each Celery worker) and is recorded in the run's tags,
where run monitoring asks the worker whether the run is alive and the UI shows where it ran."""

from __future__ import annotations

import os

import dagster as dg

from episode_warehouse.settings import WORKER_ENV, WORKER_TAG

__all__ = ["WORKER_ENV", "WORKER_TAG", "record_worker"]


def record_worker(context: dg.InitResourceContext) -> None:
    """On a cluster worker, record the worker in the run's tags (once)."""
    worker = os.environ.get(WORKER_ENV)
    run = context.run
    known = run is not None and run.tags.get(WORKER_TAG) == worker
    if worker and run is not None and context.instance is not None and not known:
        context.instance.add_run_tags(run.run_id, {WORKER_TAG: worker})
