"""A run whose process was killed keeps its concurrency-pool slot in the instance; the next CLI
run frees it (the kill -9 matrix found a rerun waiting for a dead run's download slot for ever),
and leaves a live run's slot alone. A run's process is told by its pid *and* its start time
(#48): the substring ``warehouse`` in a command line failed a live run started from a notebook
and kept the slot of a dead run whose pid was reused by any process naming the warehouse."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys

import dagster as dg
import pytest
from dagster._core.storage.dagster_run import DagsterRun, DagsterRunStatus

from warehouse_cli.dead_runs import (
    HOST_TAG,
    NAMESPACE_TAG,
    PID_TAG,
    START_TAG,
    pid_namespace,
    process_start,
    process_tags,
    release_dead_runs,
)

pytestmark = pytest.mark.integration  # a child process gives a pid that is gone


def _run(instance, pid: int, start: str | None, namespace: str | None = None) -> str:
    tags = {PID_TAG: str(pid), HOST_TAG: socket.gethostname(),
            NAMESPACE_TAG: namespace or pid_namespace() or ""}  # fmt: skip
    run = DagsterRun(job_name="__ASSET_JOB", status=DagsterRunStatus.STARTED,
                     tags={**tags, START_TAG: start} if start else tags)  # fmt: skip
    instance.add_run(run)
    return run.run_id


def _sleeper(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", *args])


def test_a_process_is_told_by_its_start_not_its_command_line():
    assert process_tags()[START_TAG] == process_start(os.getpid())
    child = _sleeper()
    try:
        assert process_start(child.pid) not in (None, process_start(os.getpid()))
    finally:
        child.kill()
        child.wait()
    assert process_start(child.pid) is None


def test_dead_runs_slots_are_freed_and_live_ones_kept():
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    notebook = _sleeper()  # a live run started from a notebook: no 'warehouse' in its cmdline
    reuser = _sleeper("warehouse")  # holds the pid a dead run recorded, names the warehouse
    overrides = {"concurrency": {"pools": {"default_limit": 1}}}
    try:
        with dg.instance_for_test(overrides=overrides) as instance:
            storage = instance.event_log_storage
            storage.set_concurrency_slots("download", 1)  # as a run of the pool initializes it
            dead = _run(instance, gone.pid, "0:1")
            live = _run(instance, notebook.pid, process_start(notebook.pid))
            # a dead run whose pid another process took since (its start differs)
            reused = _run(instance, reuser.pid, "not-" + str(process_start(reuser.pid)))
            assert storage.claim_concurrency_slot("download", reused, "step").is_claimed
            assert not storage.claim_concurrency_slot("download", live, "step").is_claimed
            assert not storage.claim_concurrency_slot("download", dead, "step").is_claimed
            assert sorted(release_dead_runs(instance)) == sorted([dead, reused])
            for run_id in (dead, reused):
                assert instance.get_run_by_id(run_id).status == DagsterRunStatus.FAILURE
            assert instance.get_run_by_id(live).status == DagsterRunStatus.STARTED
            assert storage.claim_concurrency_slot("download", live, "step").is_claimed
            assert release_dead_runs(instance) == []  # the live run holds it now
    finally:
        for p in (notebook, reuser):
            p.kill()
            p.wait()


@pytest.mark.skipif(shutil.which("unshare") is None or os.geteuid() != 0,
                    reason="needs unshare and root for a pid namespace")  # fmt: skip
def test_a_live_run_of_another_pid_namespace_keeps_its_slot():
    """A CLI run in another pid namespace (a container on the same host name and boot): its pid
    means nothing here, so its slot is never freed from here (#57 item 13). The run's process
    is real: a sleeper in a namespace of its own, tagged as the CLI tags a run."""
    script = (
        "import os, time; "
        "print(os.getpid(), os.readlink('/proc/self/ns/pid'), flush=True); time.sleep(120)"
    )
    inside = subprocess.Popen(
        ["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-c", script],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        pid, namespace = inside.stdout.readline().split()
        assert namespace != pid_namespace()
        overrides = {"concurrency": {"pools": {"default_limit": 1}}}
        with dg.instance_for_test(overrides=overrides) as instance:
            storage = instance.event_log_storage
            storage.set_concurrency_slots("download", 1)
            # as a pid recorded there would be: no process of this namespace has it
            theirs = _run(instance, int(pid) + 99_999, "0:1", namespace)
            assert storage.claim_concurrency_slot("download", theirs, "step").is_claimed
            assert release_dead_runs(instance) == []
            assert instance.get_run_by_id(theirs).status == DagsterRunStatus.STARTED
    finally:
        inside.kill()
        inside.wait()
