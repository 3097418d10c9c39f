"""Runs of this machine's CLI whose process is gone (killed with -9, the machine's OOM killer)
still hold their concurrency-pool slots in the instance: the next run of a pooled step (a
download, the catalog writer) would wait for the slot forever. Each CLI run records its process
(``warehouse/pid``, ``warehouse/host``, and ``warehouse/process_start``: the boot's id and the
process's start time in clock ticks, from ``/proc``); before a run starts, the slots of runs
whose process is no longer alive are freed and those runs marked failed.

A process is the run's when its pid exists *and* started when the run's did: a pid reused by
any other process (whatever its command line) is not the run's, and a run started from a
notebook or a script is alive whatever its command line says. Where ``/proc`` is missing
(macOS) or a run recorded no start (older runs), a live pid counts as the run's: a slot is never
taken from a run that may be alive.

A pid means something only in its pid namespace (a container's, ``unshare --pid``): each run
records its namespace (``warehouse/pid_namespace``, ``/proc/self/ns/pid``), and a run of
another namespace, or of none recorded where this one has one, is never freed from here: its
process cannot be seen (the same host name and boot id do not make it ours; a second CLI in
another namespace freed a live run's slot).

Runs of other machines (a cluster's workers) are left to the daemon's run monitoring.
"""

from __future__ import annotations

import logging
import os
import socket
from pathlib import Path

import dagster as dg

log = logging.getLogger(__name__)
PID_TAG, HOST_TAG, START_TAG = "warehouse/pid", "warehouse/host", "warehouse/process_start"
NAMESPACE_TAG = "warehouse/pid_namespace"
_UNFINISHED = (dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.STARTING)
_STARTTIME_FIELD = 19  # /proc/<pid>/stat's 22nd field, counted after the ")" ending its name


def process_start(pid: int) -> str | None:
    """``<boot id>:<start time in clock ticks>`` of process ``pid``, or None (no such process,
    or no ``/proc``): two processes with one pid never share it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None
    fields = stat.rsplit(b")", 1)[-1].split()
    if len(fields) <= _STARTTIME_FIELD:
        return None
    return f"{boot}:{fields[_STARTTIME_FIELD].decode()}"


def pid_namespace() -> str | None:
    """This process's pid namespace (``pid:[4026531836]``), or None without ``/proc``."""
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return None


def process_tags() -> dict[str, str]:
    """The tags that name this process as the run's owner."""
    tags = {PID_TAG: str(os.getpid()), HOST_TAG: socket.gethostname()}
    start = process_start(os.getpid())
    namespace = pid_namespace()
    if namespace:
        tags[NAMESPACE_TAG] = namespace
    return {**tags, START_TAG: start} if start else tags


def _alive(pid: int, started: str | None) -> bool:
    """Whether the run's process (``pid``, started at ``started``) is still running."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process holds the pid: compared by its start below
    now = process_start(pid)
    if started is None or now is None:
        return True  # nothing to compare: never take a slot from a run that may be alive
    return now == started


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
    host, namespace, freed = socket.gethostname(), pid_namespace(), []
    for run_id in owners:
        run = instance.get_run_by_id(run_id)
        if run is None or run.tags.get(HOST_TAG) != host or not run.tags.get(PID_TAG):
            continue
        if run.tags.get(NAMESPACE_TAG) != namespace:
            continue  # a pid of a namespace we cannot see: its process may well be alive
        if run.status in _UNFINISHED and _alive(int(run.tags[PID_TAG]), run.tags.get(START_TAG)):
            continue
        storage.free_concurrency_slots_for_run(run_id)
        if run.status in _UNFINISHED:
            instance.report_run_failed(run, "its process is gone (killed); its pool slots freed")
        freed.append(run_id)
    if freed:
        log.warning("freed the pool slots of %d run(s) whose process is gone", len(freed))
    return freed
