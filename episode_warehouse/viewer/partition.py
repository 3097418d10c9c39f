"""One partition's TED as the viewer reads it: the episodes table, and one episode's rows.

The TED is read through :class:`~episode_warehouse.ted.reader.TedReader`: memory-mapped from
a folder (an episode's rows are read when shown), by byte ranges from a bucket, one episode at
a time, never downloaded whole. Either way at most :data:`EPISODES_KEPT` episodes' rows are
held, so the server's memory is bounded by a few episodes' frames.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from tensordict import TensorDictBase

from episode_warehouse.errors import PartitionKeyError
from episode_warehouse.storage import Root
from episode_warehouse.ted.reader import TedReader
from episode_warehouse.ted.record import TedRecord

EPISODES_KEPT = 2  # the episode shown and the one before it (going back is common)


@dataclass(frozen=True)
class Span:
    """Where one episode's steps are in its TED."""

    episode: int
    start: int
    length: int


class PartitionTed:
    """The TED of ``source``/``partition`` of ``root``, read one episode at a time."""

    def __init__(self, root: Root, source: str, partition: str) -> None:
        self.source, self.partition = source, partition
        self._reader = TedReader.of(root, source, partition)  # checks the source and the key
        self.record: TedRecord = self._reader.meta
        self.episodes: pa.Table = self._reader.episodes()
        self._starts = self.episodes.column("start").to_numpy()
        self._lengths = self.episodes.column("length").to_numpy()
        self._kept: OrderedDict[int, TensorDictBase] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def bytes_fetched(self) -> int:
        """Bytes read from the bucket so far (0 on a local root: its TED is memory-mapped)."""
        return self._reader.bytes_fetched

    def span(self, episode: int) -> Span:
        """The steps of ``episode`` (its index in this partition)."""
        if not 0 <= episode < len(self._starts):
            raise PartitionKeyError(
                f"no episode {episode} in {self.source} {self.partition} "
                f"(it has {len(self._starts)}: 0 to {len(self._starts) - 1})",
                subject=f"{self.source}/{self.partition}",
                fix="choose an episode from the partition's list",
            )
        return Span(episode, int(self._starts[episode]), int(self._lengths[episode]))

    def rows(self, episode: int) -> TensorDictBase:
        """The TED rows of ``episode`` (``length`` steps, the TED's keys)."""
        span = self.span(episode)
        with self._lock:
            if episode in self._kept:
                self._kept.move_to_end(episode)
                return self._kept[episode]
        rows = self._reader.read(span.start, span.length)
        with self._lock:
            self._kept[episode] = rows
            while len(self._kept) > EPISODES_KEPT:
                self._kept.popitem(last=False)
        return rows

    def column(self, name: str) -> np.ndarray | None:
        """A column of the episodes table as numpy (None when the table has no such column)."""
        if name not in self.episodes.column_names:
            return None
        return self.episodes.column(name).to_numpy(zero_copy_only=False)
