"""Every private Dagster and Celery (billiard) API the cluster code uses, in one module.

Checked against Dagster 1.13.27, dagster-celery 0.29.27 and Celery 5.7.0 (uv.lock); when one of
them is upgraded, this module is where to look first, and ``tests/cluster`` exercises each name:

- ``dagster._core.launcher``: the run launcher interface the Celery launcher subclass implements
  (``CheckRunHealthResult``, ``LaunchRunContext``, ``WorkerStatus``); Dagster exports no public
  name for them.
- ``dagster._core.storage.dagster_run``: ``DagsterRun`` (the launcher's argument) and
  ``FINISHED_STATUSES`` (when a backfill's runs are done).
- ``dagster._core.execution.backfill.BulkActionStatus``: a backfill's status, which the
  GraphQL API reports by these names.
- ``dagster._grpc.types.ExecuteRunArgs``: the command a Kubernetes run Job executes, rendered
  without a cluster exactly as ``K8sRunLauncher`` builds it.
- billiard's ``process._config["authkey"]``: see :func:`use_stdlib_authkey`.

``dagster.yaml``'s ``dagster._core.run_coordinator`` module path is the one Dagster's own
deployment docs give for the queued run coordinator; it is configuration, not an import.
"""

from __future__ import annotations

import os
from multiprocessing.process import AuthenticationString  # type: ignore[attr-defined]

from dagster._core.execution.backfill import BulkActionStatus
from dagster._core.launcher import CheckRunHealthResult, LaunchRunContext, WorkerStatus
from dagster._core.storage.dagster_run import FINISHED_STATUSES, DagsterRun

__all__ = [
    "FINISHED_STATUSES",
    "BulkActionStatus",
    "CheckRunHealthResult",
    "DagsterRun",
    "LaunchRunContext",
    "WorkerStatus",
    "execute_run_args",
    "use_stdlib_authkey",
]


def execute_run_args():
    """``dagster._grpc.types.ExecuteRunArgs`` (imported on use: it pulls in gRPC)."""
    from dagster._grpc.types import ExecuteRunArgs

    return ExecuteRunArgs


def use_stdlib_authkey(process) -> None:
    """billiard (Celery's fork of multiprocessing) stands in for the current process in a
    worker, with its own authkey type, which it refuses to pickle when the standard library
    starts a child with spawn or forkserver: give ``process`` the standard library's type."""
    process._config["authkey"] = AuthenticationString(os.urandom(32))
