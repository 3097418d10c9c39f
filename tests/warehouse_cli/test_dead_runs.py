"""A run whose process was killed keeps its concurrency-pool slot in the instance; the next CLI
run frees it (the kill -9 matrix found a rerun waiting for a dead run's download slot for ever),
and leaves a live run's slot alone."""

from __future__ import annotations

import socket
import subprocess
import sys

import dagster as dg
import pytest
from dagster._core.storage.dagster_run import DagsterRun, DagsterRunStatus

from warehouse_cli.dead_runs import HOST_TAG, PID_TAG, release_dead_runs

pytestmark = pytest.mark.integration  # a child process gives a pid that is gone


def _run(instance, pid: int) -> str:
    run = DagsterRun(job_name="__ASSET_JOB", status=DagsterRunStatus.STARTED,
                     tags={PID_TAG: str(pid), HOST_TAG: socket.gethostname()})  # fmt: skip
    instance.add_run(run)
    return run.run_id


def test_a_dead_runs_slot_is_freed_and_a_live_ones_kept():
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    # a live CLI-like process (its command line names the warehouse, as the CLI's does)
    busy = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", "warehouse"])
    overrides = {"concurrency": {"pools": {"default_limit": 1}}}
    with dg.instance_for_test(overrides=overrides) as instance:
        storage = instance.event_log_storage
        storage.set_concurrency_slots("download", 1)  # as a run of the pool initializes it
        dead = _run(instance, gone.pid)
        live = _run(instance, busy.pid)
        assert storage.claim_concurrency_slot("download", dead, "atari_replay_files").is_claimed
        assert not storage.claim_concurrency_slot("download", live, "step").is_claimed  # waits
        assert release_dead_runs(instance) == [dead]
        assert instance.get_run_by_id(dead).status == DagsterRunStatus.FAILURE
        assert storage.claim_concurrency_slot("download", live, "step").is_claimed
        assert release_dead_runs(instance) == []  # the live run holds it now
    busy.kill()
    busy.wait()
