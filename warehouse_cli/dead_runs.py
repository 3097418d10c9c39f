"""Runs of this machine's CLI whose process is gone (killed with -9, the machine's OOM killer)
still hold their concurrency-pool slots in the instance: the next run of a pooled step (a
download, the catalog writer) would wait for the slot forever. Each CLI run records its process
(``warehouse/pid``, ``warehouse/host``); before a run starts, the slots of runs whose process is
no longer alive are freed and those runs marked failed.

Runs of other machines (a cluster's workers) are left to the daemon's run monitoring.
"""

from __future__ import annotations

import logging
import os
import socket
from pathlib import Path

import dagster as dg

log = logging.getLogger(__name__)
PID_TAG, HOST_TAG = "warehouse/pid", "warehouse/host"
_UNFINISHED = (dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.STARTING)


def process_tags() -> dict[str, str]:
    """The tags that name this process as the run's owner."""
    return {PID_TAG: str(os.getpid()), HOST_TAG: socket.gethostname()}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    cmdline = Path(f"/proc/{pid}/cmdline")  # a reused pid runs something else
    return not cmdline.exists() or b"warehouse" in cmdline.read_bytes()


def release_dead_runs(instance: dg.DagsterInstance) -> list[str]:
    """Free the pool slots of this host's unfinished CLI runs whose process is gone and mark
    them failed; returns their run ids."""
    storage = instance.event_log_storage
    if not storage.supports_global_concurrency_limits:
        return []
    owners: set[str] = set()
    for pool in storage.get_concurrency_keys():
        info = storage.get_concurrency_info(pool)
        owners |= {s.run_id for s in info.claimed_slots} | {s.run_id for s in info.pending_steps}
    host, freed = socket.gethostname(), []
    for run_id in owners:
        run = instance.get_run_by_id(run_id)
        if run is None or run.tags.get(HOST_TAG) != host or not run.tags.get(PID_TAG):
            continue
        if run.status in _UNFINISHED and _alive(int(run.tags[PID_TAG])):
            continue
        storage.free_concurrency_slots_for_run(run_id)
        if run.status in _UNFINISHED:
            instance.report_run_failed(run, "its process is gone (killed); its pool slots freed")
        freed.append(run_id)
    if freed:
        log.warning("freed the pool slots of %d run(s) whose process is gone", len(freed))
    return freed
