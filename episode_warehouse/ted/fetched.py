"""An episode's rows fetched from a bucket, read as a folder's rows are read.

A stream over a bucket root fetches each episode ahead (one byte range per file:
:meth:`~episode_warehouse.ted.ranges.RangeRows.fetch`). :class:`FetchedRows` holds what came:
each per-step file's rows from the episode's first step (row 0 here), the final files whole.
It answers ``file_rows`` as :class:`~episode_warehouse.ted.assemble.MappedRows` does, so the
batch read (:func:`~episode_warehouse.ted.gather.gather`) reads a batch of slices from fetched
episodes exactly as from memory-mapped ones, each frame decoded once straight into the batch;
:meth:`join` puts a batch's episodes one after another first (their encoded bytes copied, not
their pixels). :meth:`assembled` gives the episode as the TED's TensorDict (an item read alone).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tensordict import TensorDictBase

from episode_warehouse.frames.plain_rows import Rows, join_rows
from episode_warehouse.ted.assemble import assemble
from episode_warehouse.ted.record import TedRecord


@dataclass
class FetchedRows:
    """``length`` steps of a TED (``ted``): ``files`` by name, each per-step file's rows from
    the first step (at least ``length`` of them), each final file (``finals``) whole."""

    ted: TedRecord
    files: dict[str, Rows]
    length: int
    finals: frozenset[str]
    _assembled: TensorDictBase | None = field(default=None, repr=False)

    def file_rows(self, file: str) -> Rows:
        return self.files[file]

    def assembled(self) -> TensorDictBase:
        """The steps as the TED's TensorDict (``open_ted``'s keys), built once."""
        if self._assembled is None:
            self._assembled = assemble(self.ted, self.files.__getitem__, self.length)
        return self._assembled

    @classmethod
    def join(cls, parts: list[FetchedRows]) -> FetchedRows:
        """The steps of ``parts`` (episodes of one TED) one after another: part ``k``'s row 0
        is row ``sum(p.length for p in parts[:k])``."""
        if len(parts) == 1:
            return parts[0]
        first = parts[0]
        files = {
            name: rows if name in first.finals
            else join_rows([p.files[name].window(0, p.length) for p in parts])
            for name, rows in first.files.items()
        }  # fmt: skip
        return cls(first.ted, files, sum(p.length for p in parts), first.finals)
