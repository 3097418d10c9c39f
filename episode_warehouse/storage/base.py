"""The warehouse root and its artifacts, as the rest of the warehouse sees them.

A :class:`Root` is where artifacts live: a local folder (:mod:`~episode_warehouse.storage.local`)
or ``gs://bucket/prefix`` (:mod:`~episode_warehouse.storage.bucket`). It is parsed once
(:func:`~episode_warehouse.storage.parse.parse_root`) and then does the work itself: every
consumer calls the same methods, and no code outside this package asks which kind it holds.

An :class:`Artifact` is one folder of files with its record (``meta.json``) written last: a
TED, a decoded partition, a partition's catalog rows. The record that counts is the root's (the
folder's file, or the bucket's object); a reader reads it, then the files it lists, whole or as
byte ranges. A *writer* root also has a working folder (``folder``: the root itself, or a bucket
root's local copy) where stages build, and publishes from it; a reader root has none and
never writes a byte (:class:`~episode_warehouse.errors.ReadOnlyRootError` says so when asked).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from episode_warehouse.errors import (
    ConfigError,
    CorruptInputError,
    LimitExceededError,
    ReadOnlyRootError,
)
from episode_warehouse.records import RECORD

# files a root keeps beside an artifact's files in its working folder, not part of the artifact
# (a bucket root's note of which files of its local copy were verified, and when)
MAX_DOCUMENT_BYTES = 16 << 20  # a root's documents are a mapping, a selection's SQL: small
VERIFIED = ".verified.json"
WORKING_NOTES = (VERIFIED,)


def check_document_size(size: int, location: str) -> None:
    """Refuse a document of the root larger than :data:`MAX_DOCUMENT_BYTES` before it is read
    (anyone who can write the root can plant one).

    Raises:
        LimitExceededError: naming the document and its size.
    """
    if size > MAX_DOCUMENT_BYTES:
        raise LimitExceededError(
            f"the document has {size:,} bytes, over the {MAX_DOCUMENT_BYTES:,} a document may have",
            subject=location,
            fix="a mapping or a selection's SQL is small: replace the file",
        )


def read_only(url: str, what: str = "to build or publish here") -> ReadOnlyRootError:
    """The error of a write (or a writer's local folder) asked of a root opened for reading."""
    return ReadOnlyRootError(
        "this root was opened for reading: it has no local copy and writes nothing",
        subject=url,
        fix=f"open the root as a writer (the stages do: parse_root(..., writer=True)) {what}",
    )


class Artifact(ABC):
    """One artifact of a root, ``rel`` its name under the root (``ted/atari/Pong/1``)."""

    rel: str
    record_name: str

    @property
    @abstractmethod
    def url(self) -> str:
        """Where it is, as a user would name it (a folder, or ``gs://...``)."""

    @property
    @abstractmethod
    def folder(self) -> Path:
        """Its files on this machine, where a writer builds it (a writer root's only)."""

    # -- reading --------------------------------------------------------------------------

    @abstractmethod
    def read(self) -> tuple[dict, int]:
        """The published record and its generation; ({}, 0) when there is none."""

    @abstractmethod
    def size(self, record: dict, file: str) -> int:
        """The size in bytes of ``file`` of the version ``record`` describes."""

    @abstractmethod
    def lists(self, record: dict, file: str) -> bool:
        """Whether ``file`` (a name ``record`` gives, checked to be a safe relative name first)
        is a file of that version: listed in a bucket record's published files; in a folder,
        a file there."""

    @abstractmethod
    def read_range(self, record: dict, file: str, start: int, stop: int) -> bytes:
        """Bytes ``[start, stop)`` of ``file`` of the version ``record`` describes.

        Raises:
            StaleSelectionError: that version was replaced and its files are gone.
        """

    def read_file(self, record: dict, file: str) -> bytes:
        """The whole of a (small) ``file`` of ``record``'s version."""
        return self.read_range(record, file, 0, self.size(record, file))

    @abstractmethod
    def mapped(self, record: dict) -> Path | None:
        """The folder of ``record``'s files when they are files on this machine already, to
        memory-map; None when reading them takes requests (read ranges, or :meth:`fetch`)."""

    @abstractmethod
    def keeps(self, record: dict) -> bool:
        """Whether the files of ``record``'s version may still be read once another version
        is published: a bucket keeps a replaced version's objects for a while (a read of one
        that is gone raises StaleSelectionError); a folder's replaced version is gone."""

    @abstractmethod
    def fetch(self, record: dict) -> Path:
        """A folder on this machine holding every file of ``record``'s version, checked
        against the record (a bucket's are downloaded once into the reader cache).

        Raises:
            StaleSelectionError: that version was replaced and its files are gone.
        """

    @abstractmethod
    def file_url(self, record: dict, file: str) -> str:
        """The path or URL DuckDB reads ``file`` of ``record``'s version from."""

    # -- writing (a writer root's artifacts) -----------------------------------------------

    @abstractmethod
    def checkout(self, record: dict) -> None:
        """Make :attr:`folder` hold ``record``'s version (a bucket's is pulled if it is not
        there already)."""

    @abstractmethod
    def working_record(self, current: dict, version: str) -> dict:
        """The record of the copy in :attr:`folder` a build of ``version`` may start from,
        ``current`` the published record (a bucket's local copy of a third version is removed
        first: never build on it)."""

    @abstractmethod
    def publish(self, previous: dict, generation: int) -> dict:
        """Make the version built in :attr:`folder` the published one, over ``previous`` (the
        record of ``generation`` read before the build); returns the record as published.

        Raises:
            ConcurrentWriteError: another writer published first.
        """

    @abstractmethod
    def delete(self) -> bool:
        """Remove the artifact (the record first, then its files); True if there was one."""


class Root(ABC):
    """Where a warehouse's artifacts live (see the module)."""

    @property
    @abstractmethod
    def url(self) -> str:
        """The root as the user gave it: the folder, or ``gs://bucket/prefix``."""

    @property
    @abstractmethod
    def writer(self) -> bool:
        """Whether this process builds and publishes here (readers never write)."""

    @property
    @abstractmethod
    def folder(self) -> Path:
        """The local folder stages build in (a bucket root's local copy); a writer's only.

        Raises:
            ReadOnlyRootError: a reader's bucket root has no local copy.
        """

    @abstractmethod
    def artifact(self, rel: str, record: str = RECORD) -> Artifact:
        """The artifact ``rel`` (a relative name this warehouse made), record file ``record``."""

    @abstractmethod
    def published(self, prefix: str, depth: int) -> dict[str, dict]:
        """``rel`` -> published record of every artifact ``depth`` names below ``prefix``
        (``catalog/rows``, 2: ``catalog/rows/<source>/<partition>``)."""

    @abstractmethod
    def table_files(self, prefix: str, depth: int, file: str) -> str | list[str] | None:
        """What DuckDB reads for ``file`` of every artifact published ``depth`` names below
        ``prefix``: a glob (a folder's, so that a partition published later shows), or the list
        of the files the records name (a bucket's); None when there is none."""

    @abstractmethod
    def exists(self) -> bool:
        """Whether the root is there to read (a folder that exists; a bucket: assumed)."""

    @abstractmethod
    def has_any(self, prefixes: Iterable[str]) -> bool:
        """Whether anything was ever written under one of ``prefixes``."""

    @abstractmethod
    def read_bytes(self, rel: str) -> bytes | None:
        """A small document of the root (a mapping, a selection's SQL), or None."""

    def read_text(self, rel: str) -> str | None:
        """:meth:`read_bytes` as UTF-8 text.

        Raises:
            CorruptInputError: the document is not UTF-8.
        """
        data = self.read_bytes(rel)
        if data is None:
            return None
        try:
            return data.decode()
        except UnicodeDecodeError as exc:
            raise CorruptInputError(
                f"not UTF-8 text ({exc.reason} at byte {exc.start})",
                subject=self.location(rel),
                fix="write the file as UTF-8",
            ) from None

    @abstractmethod
    def write_text(self, rel: str, text: str | None, *, expected: str | None) -> None:
        """Replace the document ``rel`` (None: delete it) if it still reads ``expected``.

        Raises:
            ConcurrentWriteError: it changed since it was read.
        """

    @abstractmethod
    def location(self, rel: str) -> str:
        """The path or URL of ``rel`` as DuckDB names it (the one place a query may read)."""

    @abstractmethod
    def duckdb_files(self) -> tuple[str, ...] | None:
        """What a DuckDB connection needs to read this root's files, as plain values that
        cross a process boundary (the SQL sandbox's): see :func:`register_files`."""

    @abstractmethod
    def keep_views(
        self, rel: str, statements: Callable[[], list[str]], key: str, rebuild: bool = False
    ) -> Path | None:
        """Keep a DuckDB database of ``statements`` at ``rel`` for other DuckDB clients (rebuilt
        when ``key`` changed, or ``rebuild``); the path, or None where the root's files are not
        local files."""

    @abstractmethod
    def reader(self) -> Root:
        """The same root for reading only."""

    def artifact_at(self, target: Path, record: str = RECORD) -> Artifact:
        """The artifact whose working folder is ``target``, a folder under :attr:`folder`.

        Raises:
            ConfigError: ``target`` is outside this root's folder.
        """
        target = Path(target).absolute()
        if not target.is_relative_to(self.folder):
            raise ConfigError(
                f"an artifact of {self.url} must be built in its local copy {self.folder}",
                subject=str(target),
                fix="use the paths of this root's WarehouseLayout",
            )
        return self.artifact(target.relative_to(self.folder).as_posix(), record)


def register_files(con: Any, files: tuple[str, ...] | None, *, read_only: bool) -> None:
    """Let the DuckDB connection ``con`` read the files of a root whose
    :meth:`Root.duckdb_files` is ``files`` (a folder's: nothing to do; a bucket's: its
    filesystem, ``read_only`` refusing every write)."""
    if files is None:
        return
    from episode_warehouse.storage.bucket.duckdb_files import filesystem

    (endpoint,) = files[1:]
    con.register_filesystem(filesystem(endpoint or None, read_only=read_only))
