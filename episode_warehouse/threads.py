"""The one rule for how many threads (and worker processes) a pool gets.

- **Compute** that releases the GIL (numpy reductions, image decoders, zlib) and worker
  processes: one per core this process may run on, :func:`usable_cores` (the scheduler's
  affinity mask, so a container's cpuset or ``taskset`` counts where ``os.cpu_count()`` would
  count the host's), optionally capped.
- **Transfers** (object storage, the hub): :data:`TRANSFER_THREADS` per transfer, the size of
  the HTTP connection pool (google-cloud-storage keeps 10 connections per client), not the
  cores. The raw stages' downloads take theirs from their resource's ``download_workers``
  (default 4: a raw stage's files are large, and several partitions download at once).

Pools are opened by the call that uses them, in a ``with`` block, so that none outlives it; the
one exception is :class:`~episode_warehouse.ted.ranges.RemoteTed`, whose pool lives as
long as the reader (a trainer's reads would otherwise start threads per sample).
"""

from __future__ import annotations

import os

TRANSFER_THREADS = 8


def usable_cores() -> int:
    """The cores this process may run on (at least 1)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux: no affinity masks
        return max(1, os.cpu_count() or 1)


def compute_threads(most: int | None = None, reserve: int = 0) -> int:
    """Threads (or processes) for compute: the usable cores less ``reserve``, at most ``most``,
    at least 1."""
    n = usable_cores() - reserve
    return max(1, min(n, most) if most is not None else n)
