"""The one worker mechanism: a process pool from the standard library, with typed failures.

Decoders copy frames and exports write PNG files in worker processes. :class:`WorkerPool` wraps
``concurrent.futures.ProcessPoolExecutor`` on a *forkserver* context: workers fork from a small
server process started once (not from a Dagster run process with threads and open sockets),
import only what their function needs, and are reused for every job of the pool.

What crosses the pool: a job's arguments and its return value or exception, pickled. Our own
errors pickle with their subject and fix, ``OSError`` with its errno, so a full disk inside a
worker surfaces in the parent as the same :class:`~episode_warehouse.errors.DiskFullError` as
in the parent (``atomic.staged`` converts it). A worker that dies (killed, out of memory) breaks
the pool: that is a :class:`~episode_warehouse.errors.WorkerError` (transient, retried by the
run's retry policy), as is a job that runs past ``timeout_s``.

``processes=0`` runs every job in the calling thread (same interface, no processes): for small
inputs and for one-core machines.

Workers do not re-run the main script. multiprocessing's forkserver and spawn children execute
the parent's ``__main__`` file again (CPython 3.12 never preloads it in the forkserver), which
for a Dagster run process is the ``dagster`` entry script: 2-3 s of imports per worker, and for
an unguarded user script its whole body. The workers are started when the pool is made, with
``__main__`` presented as a module named ``__main__`` (which multiprocessing skips); jobs are
module-level functions of this package, so nothing of the main script is needed.
"""

from __future__ import annotations

import contextlib
import importlib.machinery
import logging
import multiprocessing
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from episode_warehouse.errors import WorkerError
from episode_warehouse.threads import compute_threads

log = logging.getLogger(__name__)
DEFAULT_TIMEOUT_S = 3600.0


def default_processes(reserve: int = 0, most: int = 8) -> int:
    """Processes to use: the usable cores minus ``reserve`` (at least 1, at most ``most``)."""
    return compute_threads(most, reserve)


def _ready() -> int:
    return os.getpid()


@contextlib.contextmanager
def _main_not_rerun():
    """While workers start: a ``__main__`` run from a file path looks like a module named
    ``__main__`` to multiprocessing, which then does not execute it again in the child."""
    main = sys.modules.get("__main__")
    if main is None or getattr(main, "__spec__", None) is not None or not hasattr(main, "__file__"):
        yield  # run with -m (the child imports that module by name) or interactive
        return
    main.__spec__ = importlib.machinery.ModuleSpec("__main__", None)
    try:
        yield
    finally:
        main.__spec__ = None


class WorkerPool:
    """``processes`` worker processes; use as a context manager.

    Args:
        processes: worker processes; 0 runs jobs in the calling thread.
        timeout_s: the longest one job may take before :meth:`result` gives up on the pool.
        what: names the work in errors ("frame copy", "PNG writer").
    """

    def __init__(
        self, processes: int, *, timeout_s: float = DEFAULT_TIMEOUT_S, what: str = "worker"
    ) -> None:
        self.processes = max(0, processes)
        self.timeout_s = timeout_s
        self.what = what
        self._pool: ProcessPoolExecutor | None = None
        if self.processes:
            context = multiprocessing.get_context("forkserver")
            self._pool = ProcessPoolExecutor(self.processes, mp_context=context)
            with _main_not_rerun():  # every worker starts now (later jobs reuse them)
                started = [self._pool.submit(_ready) for _ in range(self.processes)]
                for future in started:
                    self.result(future)

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future:
        """Run ``fn(*args)`` in a worker (``fn`` must be a module-level function)."""
        if self._pool is None:
            future: Future = Future()
            try:
                future.set_result(fn(*args))
            except Exception as exc:  # noqa: BLE001 - delivered through the future, as a pool would
                future.set_exception(exc)
            return future
        try:
            return self._pool.submit(fn, *args)
        except BrokenProcessPool as exc:
            raise self._broken(exc) from exc

    def result(self, future: Future, started: float | None = None) -> Any:
        """The job's return value; its exception re-raised as it was raised in the worker.

        Raises:
            WorkerError: a worker process died, or the job ran past ``timeout_s``.
        """
        left = self.timeout_s - (time.monotonic() - started if started else 0.0)
        try:
            return future.result(timeout=max(left, 0.0))
        except BrokenProcessPool as exc:
            raise self._broken(exc) from exc
        except FutureTimeout as exc:
            self.terminate()
            raise WorkerError(
                f"a {self.what} job ran longer than {self.timeout_s:g} s; its workers were stopped",
                subject=self.what,
                fix="retry; if it keeps timing out, the input is far larger than expected",
            ) from exc

    def map(self, fn: Callable[..., Any], jobs: Iterable[tuple]) -> Iterator[Any]:
        """``fn(*job)`` for each job, results in job order."""
        started = time.monotonic()
        futures = [self.submit(fn, *job) for job in jobs]
        try:
            for future in futures:
                yield self.result(future, started)
        finally:
            for future in futures:
                future.cancel()

    def _broken(self, exc: BaseException) -> WorkerError:
        return WorkerError(
            f"a {self.what} process died ({exc})",
            subject=self.what,
            fix="retry; if it recurs, check memory limits (the kernel may have killed it)",
        )

    def terminate(self) -> None:
        """Stop every worker now (jobs in flight are lost)."""
        if self._pool is None:
            return
        # the standard library has no public way to stop a running job; ``_processes`` (the
        # executor's pid -> Process map) has been there since Python 3.2
        processes = list(getattr(self._pool, "_processes", {}).values())
        for proc in processes:
            proc.kill()
        self._pool.shutdown(wait=False, cancel_futures=True)
        for proc in processes:
            proc.join(timeout=10)

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if self._pool is None:
            return
        if exc_type is None:
            self._pool.shutdown(wait=True)
        else:
            self.terminate()
