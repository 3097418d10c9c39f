"""Celery's run launcher, plus a liveness check of the worker that holds a run.

``CeleryRunLauncher`` asks the result backend how a run's task is doing; a worker killed with
SIGKILL never reports again, so its task stays ``STARTED`` and the run would look alive forever.
Each run records the worker it runs on (the run tag ``warehouse/worker``, set when the run
starts, ``resources/warehouse.py``); run monitoring then asks that worker over the broker
(Celery's ``ping``) and fails the run when it does not answer, and run retries launch it again
on a worker that does.
"""

from __future__ import annotations

import logging

from dagster_celery.launcher import CeleryRunLauncher

from episode_warehouse.settings import WORKER_TAG
from warehouse_cli.cluster.private_api import (
    CheckRunHealthResult,
    DagsterRun,
    LaunchRunContext,
    WorkerStatus,
)

log = logging.getLogger(__name__)
PING_TIMEOUT_S = 3.0


class WarehouseCeleryRunLauncher(CeleryRunLauncher):
    def launch_run(self, context: LaunchRunContext) -> None:
        # a retried run copies its parent's tags: forget the parent's worker until it starts
        if context.dagster_run.tags.get(WORKER_TAG):
            self._instance.add_run_tags(context.dagster_run.run_id, {WORKER_TAG: ""})
        super().launch_run(context)

    def check_run_worker_health(self, run: DagsterRun) -> CheckRunHealthResult:
        health = super().check_run_worker_health(run)
        worker = run.tags.get(WORKER_TAG)
        if health.status not in (WorkerStatus.RUNNING, WorkerStatus.UNKNOWN) or not worker:
            return health
        replies = self.celery.control.ping(destination=[worker], timeout=PING_TIMEOUT_S)
        if any(worker in reply for reply in replies):
            return health
        log.warning("worker %s of run %s does not answer", worker, run.run_id)
        return CheckRunHealthResult(
            WorkerStatus.FAILED, f"worker {worker} does not answer (lost or killed)"
        )
