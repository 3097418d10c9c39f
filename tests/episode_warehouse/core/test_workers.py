"""The one worker pool: results in order, the worker's own exception (typed) in the parent,
timeouts and dead workers as WorkerError, the same behaviour in-process."""

import errno
import os
import signal
import time

import pytest

from episode_warehouse.errors import CorruptInputError, WorkerError
from episode_warehouse.workers import WorkerPool

pytestmark = pytest.mark.integration  # the worker pool's processes


def square(x):
    return x * x


def fail_typed(name):
    raise CorruptInputError("bad bytes", subject=name, fix="re-download it")


def fail_disk(path):
    raise OSError(errno.ENOSPC, "No space left on device", path)


def sleep_for(seconds):
    time.sleep(seconds)
    return os.getpid()


def die():
    os.kill(os.getpid(), signal.SIGKILL)


@pytest.mark.parametrize("processes", [0, 2], ids=["in-process", "two-workers"])
def test_results_and_typed_errors(processes):
    with WorkerPool(processes) as pool:
        assert list(pool.map(square, [(i,) for i in range(7)])) == [i * i for i in range(7)]
        with pytest.raises(CorruptInputError) as err:
            pool.result(pool.submit(fail_typed, "shard.tar"))
        assert (err.value.subject, err.value.fix) == ("shard.tar", "re-download it")
        with pytest.raises(OSError) as err:
            pool.result(pool.submit(fail_disk, "/x"))
        assert err.value.errno == errno.ENOSPC
        assert pool.result(pool.submit(square, 3)) == 9  # still working after failures


def test_workers_are_other_processes_and_are_reused():
    with WorkerPool(2) as pool:
        pids = set(pool.map(sleep_for, [(0.05,)] * 8))
    assert os.getpid() not in pids and 1 <= len(pids) <= 2


def test_a_job_past_its_timeout():
    with WorkerPool(1, timeout_s=0.5, what="frame copy") as pool:
        started = time.monotonic()
        with pytest.raises(WorkerError, match="frame copy job ran longer than 0.5 s"):
            pool.result(pool.submit(sleep_for, 30))
        assert time.monotonic() - started < 10


def test_a_worker_that_dies():
    with (
        pytest.raises(WorkerError, match="PNG writer process died"),
        WorkerPool(1, what="PNG writer") as pool,
    ):
        pool.result(pool.submit(die))
