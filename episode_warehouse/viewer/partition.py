"""One partition's TED as the viewer reads it: the episodes table, and one episode's rows.

A local root's TED is memory-mapped (an episode's rows are read when shown); a ``gs://`` root's
is read by byte ranges (:class:`~episode_warehouse.ted.remote_ranges.RemoteTed`), one episode
at a time, never downloaded whole. Either way at most :data:`EPISODES_KEPT` episodes' rows are
held, so the server's memory is bounded by a few episodes' frames.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from tensordict import TensorDictBase

if TYPE_CHECKING:
    from episode_warehouse.ted.remote_ranges import RemoteTed

from episode_warehouse.errors import PartitionKeyError
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.ted.layout import EPISODES
from episode_warehouse.ted.record import TedRecord

EPISODES_KEPT = 2  # the episode shown and the one before it (going back is common)


@dataclass(frozen=True)
class Span:
    """Where one episode's steps are in its TED."""

    episode: int
    start: int
    length: int


class PartitionTed:
    """The TED of ``source``/``partition`` under ``layout``, read one episode at a time."""

    def __init__(self, layout: WarehouseLayout, source: str, partition: str) -> None:
        self.source, self.partition = source, partition
        folder = layout.ted_dir(source, partition)  # checks the source and the partition key
        if layout.bucket is not None:
            from episode_warehouse.ted.remote_ranges import RemoteTed

            remote = RemoteTed(layout.bucket, source, partition)
            self._remote: RemoteTed | None = remote
            self.record: TedRecord = remote.ted
            self.episodes: pa.Table = remote.episodes()
            self._read = remote.read
        else:
            from episode_warehouse.ted.reader import open_ted_folder, read_meta

            self._remote = None
            self.record = read_meta(folder)
            self.episodes = pq.read_table(folder / EPISODES)
            td = open_ted_folder(folder)
            self._read = lambda start, length: td[start : start + length]
        self._starts = self.episodes.column("start").to_numpy()
        self._lengths = self.episodes.column("length").to_numpy()
        self._kept: OrderedDict[int, TensorDictBase] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def bytes_fetched(self) -> int:
        """Bytes read from the bucket so far (0 on a local root: its TED is memory-mapped)."""
        return self._remote.bytes_fetched if self._remote is not None else 0

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
        rows = self._read(span.start, span.length)
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
