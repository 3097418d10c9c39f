"""One published TED version read through its root: :class:`TedReader`, every consumer's way
in (memory-mapped where the files are on this machine, by byte ranges from a bucket)."""

from __future__ import annotations

import difflib
import logging
from pathlib import Path

import pyarrow as pa
from tensordict import TensorDictBase

from episode_warehouse.errors import NotMaterializedError, SourceMissingError, StaleSelectionError
from episode_warehouse.paths import artifact_name
from episode_warehouse.records import RECORD
from episode_warehouse.storage import Artifact, Root
from episode_warehouse.ted.assemble import MappedRows
from episode_warehouse.ted.fetched import FetchedRows
from episode_warehouse.ted.files import check_named_files, checked_record
from episode_warehouse.ted.ranges import RangeRows

log = logging.getLogger(__name__)


class TedReader:
    """One published TED version, read through its root: every consumer's way in (trainer
    loaders, the viewer, the standardized stage, exports).

    Where the files are on this machine (a folder root) rows are memory-mapped; elsewhere (a
    bucket) they are fetched as byte ranges of what is read (:mod:`~episode_warehouse.ted.
    ranges`), and :meth:`whole` fetches every file once into the reader cache, checked.
    """

    def __init__(self, artifact: Artifact, record: dict | None = None) -> None:
        record = artifact.read()[0] if record is None else record
        if not record:
            raise NotMaterializedError(
                "no TED here (its meta.json is missing)",
                subject=artifact.url,
                fix="materialize the ted stage of this partition, e.g. "
                "'warehouse materialize atari Pong/5 --through ted'",
            )
        self.artifact, self.record = artifact, record
        self.meta = checked_record(record, f"{artifact.url}/{RECORD}")
        check_named_files(
            self.meta, lambda name: artifact.lists(record, name), f"{artifact.url}/{RECORD}"
        )
        self._strategy: MappedRows | RangeRows | None = None
        self._local: MappedRows | None = None

    @property
    def _rows(self) -> MappedRows | RangeRows:
        """How rows are read: memory-mapped where the files are on this machine, else by
        byte ranges (chosen at the first read)."""
        if self._strategy is None:
            folder = self.artifact.mapped(self.record)
            if folder is not None:
                self._strategy = MappedRows(folder, self.meta)
            else:
                self._strategy = RangeRows(self.artifact, self.record, self.meta)
        return self._strategy

    def mapped_rows(self) -> MappedRows | None:
        """The rows memory-mapped where the TED's files are on this machine (a folder root,
        a writer's local copy), else None (a bucket's: read by ranges)."""
        rows = self._rows
        return rows if isinstance(rows, MappedRows) else None

    def local_rows(self) -> MappedRows:
        """The rows memory-mapped: where the files are, or from the TED fetched whole into the
        reader cache once per version (:meth:`folder`). What random access reads from a bucket
        root (``StepWindowDataset``'s windows, ``VLADataset``'s draws): a request per drawn
        frame costs more than the partition's one download (docs/object-storage.md)."""
        mapped = self.mapped_rows()
        if mapped is not None:
            return mapped
        if self._local is None:
            self._local = MappedRows(self.folder(), self.meta)
        return self._local

    @classmethod
    def of(cls, root: Root, source: str, partition: str) -> TedReader:
        """The current TED of ``source``/``partition`` in ``root``.

        Raises:
            PartitionKeyError: not a source name or partition key.
            NotMaterializedError: it was never built (naming the closest built partitions).
        """
        artifact = root.artifact(artifact_name("ted", source, partition))
        record = artifact.read()[0]
        if not record:
            depth = partition.count("/") + 1
            built = [
                rel.split("/", 2)[2] for rel in root.published(f"ted/{source}", depth)
            ]  # fmt: skip
            close = difflib.get_close_matches(partition, built, n=3, cutoff=0.5)
            raise NotMaterializedError(
                f"no TED of {source} {partition!r} in this warehouse"
                + (f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else "")
                + (
                    f"; built: {', '.join(built[:8])}{' ...' if len(built) > 8 else ''}"
                    if built
                    else ""
                ),
                subject=artifact.url,
                fix=f"materialize it: warehouse materialize {source} {partition} --through ted "
                "(or pass root= the warehouse that holds it)",
            )
        return cls(artifact, record)

    @property
    def rows(self) -> int:
        return self.meta.rows

    @property
    def bytes_fetched(self) -> int:
        """Bytes read from object storage so far (0 where the files are memory-mapped)."""
        return self._rows.bytes_fetched

    @property
    def read_ahead(self) -> int:
        """Steps a stream should read ahead of the one it yields: 0 where rows are
        memory-mapped (a read is a view), about a thousand where each read is a request."""
        return self._rows.read_ahead

    def episodes(self) -> pa.Table:
        """The TED's episodes table (episode, start, length, ...)."""
        return self._rows.episodes()

    def read(self, start: int, length: int) -> TensorDictBase:
        """Steps ``[start, start + length)`` as the TED's TensorDict (``("next",
        "observation")`` zeros on the last step of the TED, as :func:`open_ted`'s)."""
        return self._rows.read(start, length)

    def fetch(self, start: int, length: int) -> FetchedRows:
        """Steps ``[start, start + length)`` of a TED read by ranges, fetched (one range per
        file): what the batch read reads from a bucket (a memory-mapped TED needs no fetch)."""
        rows = self._rows
        if isinstance(rows, MappedRows):
            raise ValueError(f"{self.artifact.url}: memory-mapped rows are read, not fetched")
        return rows.fetch(start, length)

    def file_rows(self, file: str):
        """The rows of one of the TED's files (a camera's frames), as an array indexed by row
        numbers: ``reader.file_rows(f)[rows]`` reads the rows it picks, and only those."""
        return self._rows.file_rows(file)

    def whole(self, next_obs: str = "view") -> TensorDictBase:
        """Every step, memory-mapped (:meth:`local_rows`; the TED's record as read once)."""
        return self.local_rows().whole(next_obs)

    def folder(self) -> Path:
        """The folder of the TED's files on this machine: where they are, or fetched into the
        reader cache once per version, checked (a version replaced meanwhile and gone: the
        current one, which this reader then reads)."""
        for _ in range(3):
            try:
                return self.artifact.mapped(self.record) or self.artifact.fetch(self.record)
            except (StaleSelectionError, SourceMissingError):
                current = self.artifact.read()[0]
                if not current or current == self.record:
                    raise
                log.info("%s was republished; opening the new version", self.artifact.url)
                self.__init__(self.artifact, current)  # type: ignore[misc]
        return self.artifact.fetch(self.record)
