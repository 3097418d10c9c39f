"""Fetch the next episodes of a stream on background threads, into a bounded buffer.

A stream over a bucket root knows the order in which its shard will read episodes; while the
trainer consumes one, :class:`ReadAhead` fetches the next ``depth`` ones (byte ranges, see
:mod:`episode_warehouse.ted.ranges`), ``threads`` at a time, so that network latency
overlaps training and several requests are in flight. The depth is a number of steps made
episodes (:func:`depth_for`): a batch of short episodes spans many of them, and a batch must
not wait for the episodes past the depth (4 episodes of 40 steps made a worker wait at one
take in five, #72). Episodes are handed over in order; at
most ``depth`` fetched or in-flight episodes wait in memory; a failed fetch (after its
retries) is raised in the consuming thread, at the episode it concerns. With ``depth`` 0 (rows
memory-mapped from a folder: a read is a view, nothing to wait for) each episode is read when
it is taken, on the consuming thread, and no thread is started.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

MIN_DEPTH, MAX_DEPTH = 4, 64  # episodes fetched ahead, whatever their length


def depth_for(steps: int, lengths: np.ndarray) -> int:
    """Episodes to fetch ahead for about ``steps`` steps, episodes being of the median of
    ``lengths`` (the ones to come), within [MIN_DEPTH, MAX_DEPTH]; 0 when ``steps`` is 0
    (rows memory-mapped: nothing worth reading ahead) or nothing comes."""
    if steps <= 0 or len(lengths) == 0:
        return 0
    typical = max(1, int(np.median(lengths)))
    return min(MAX_DEPTH, max(MIN_DEPTH, steps // typical))


class ReadAhead[T]:
    """``fetch(key)`` for each of ``keys`` in order, ahead of :meth:`take`."""

    def __init__(
        self, fetch: Callable[[int], T], keys: Sequence[int], depth: int = 4, threads: int = 4
    ) -> None:
        if depth < 0 or threads < 1:
            raise ValueError(
                f"read-ahead needs depth >= 0 and threads >= 1, not {depth}, {threads}"
            )
        self._fetch, self._keys, self._depth = fetch, iter(keys), depth
        self._pending: deque[tuple[int, Future]] = deque()
        self._pool = (
            ThreadPoolExecutor(min(threads, depth), thread_name_prefix="read-ahead")
            if depth
            else None
        )

    def __enter__(self) -> ReadAhead[T]:
        self._fill()
        return self

    def __exit__(self, *exc) -> None:
        for _, future in self._pending:
            future.cancel()
        self._pending.clear()
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)

    def _fill(self) -> None:
        keys: Iterator[int] = self._keys
        while self._pool is not None and len(self._pending) < self._depth:
            key = next(keys, None)
            if key is None:
                return
            self._pending.append((key, self._pool.submit(self._fetch, key)))

    def take(self, key: int) -> T:
        """The next fetched value, which must be ``key``'s (keys are taken in order)."""
        if self._pool is None:
            return self._fetch(key)
        if not self._pending:
            raise RuntimeError(f"read-ahead has nothing left; {key} was not scheduled")
        got, future = self._pending.popleft()
        if got != key:
            raise RuntimeError(f"read-ahead out of order: expected {key}, scheduled {got}")
        self._fill()  # keep `depth` in flight while this one is consumed
        return future.result()
