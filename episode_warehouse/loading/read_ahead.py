"""Fetch the next episodes of a stream in a background thread, into a bounded buffer.

A stream over a bucket root knows the order in which its shard will read episodes; while the
trainer consumes one, :class:`ReadAhead` fetches the next ``depth`` ones (byte ranges, see
:mod:`episode_warehouse.bucket.ted_ranges`), so network latency overlaps training. At most
``depth`` fetched episodes wait in memory; a failed fetch (after its retries) is raised in the
consuming thread, at the episode it concerns.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence

_POLL_S = 0.2


class ReadAhead[T]:
    """``fetch(key)`` for each of ``keys`` in order, ahead of :meth:`take`."""

    def __init__(self, fetch: Callable[[int], T], keys: Sequence[int], depth: int = 4) -> None:
        if depth < 1:
            raise ValueError(f"read-ahead depth must be at least 1, not {depth}")
        self._fetch, self._keys = fetch, list(keys)
        self._queue: queue.Queue = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="episode-read-ahead", daemon=True)

    def __enter__(self) -> ReadAhead[T]:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=60)

    def _put(self, item: tuple) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=_POLL_S)
                return True
            except queue.Full:
                continue
        return False

    def _run(self) -> None:
        for key in self._keys:
            try:
                item: tuple = (key, self._fetch(key), None)
            except Exception as exc:  # noqa: BLE001 - handed to the consumer, raised there
                self._put((key, None, exc))
                return
            if not self._put(item):
                return

    def take(self, key: int) -> T:
        """The next fetched value, which must be ``key``'s (keys are taken in order)."""
        got, value, error = self._queue.get()
        if error is not None:
            raise error
        if got != key:
            raise RuntimeError(f"read-ahead out of order: expected {key}, fetched {got}")
        return value
