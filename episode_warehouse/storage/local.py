"""A warehouse root that is a local folder: an artifact is its folder, its record the folder's
``meta.json``; publishing is the rename :func:`~episode_warehouse.incremental.build_if_changed`
already did, so the writer's methods have nothing left to do."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from episode_warehouse.atomic import read_json, staged, staging_path, unpublish, write_lock
from episode_warehouse.errors import ConcurrentWriteError
from episode_warehouse.guards.names import name_problem
from episode_warehouse.records import RECORD
from episode_warehouse.settings import ROOT_ENV
from episode_warehouse.storage.base import Artifact, Root, check_document_size, read_only

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LocalArtifact(Artifact):
    """The artifact ``rel`` of a local root: the folder ``root.folder / rel``."""

    root: LocalRoot
    rel: str
    record_name: str = RECORD
    at: Path | None = None  # a folder outside the root (a plain export target): its own

    @property
    def folder(self) -> Path:
        return self.at if self.at is not None else self.root.folder / self.rel

    @property
    def url(self) -> str:
        return str(self.folder)

    def read(self) -> tuple[dict, int]:
        return read_json(self.folder / self.record_name), 0

    def size(self, record: dict, file: str) -> int:
        return (self.folder / file).stat().st_size

    def lists(self, record: dict, file: str) -> bool:
        # a relative name of a file in the folder; a link there is the folder owner's choice
        # (the loading benchmarks link one TED's files into several partitions)
        return name_problem(file) is None and (self.folder / file).is_file()

    def read_range(self, record: dict, file: str, start: int, stop: int) -> bytes:
        with open(self.folder / file, "rb") as f:
            return os.pread(f.fileno(), stop - start, start)

    def fetch(self, record: dict) -> Path:
        return self.folder

    def mapped(self, record: dict) -> Path | None:
        return self.folder

    def keeps(self, record: dict) -> bool:
        return self.read()[0] == record  # the folder holds the published version alone

    def file_url(self, record: dict, file: str) -> str:
        return str(self.folder / file)

    def checkout(self, record: dict) -> None:
        return None  # the published version is the folder

    def working_record(self, current: dict, version: str) -> dict:
        return current

    def publish(self, previous: dict, generation: int) -> dict:
        self.root.check_writer()
        return read_json(self.folder / self.record_name)

    def delete(self) -> bool:
        self.root.check_writer()
        return unpublish(self.folder)


@dataclass(frozen=True)
class LocalRoot(Root):
    """A warehouse root that is a local folder (``writer=False``: opened for reading)."""

    root_folder: Path
    writer: bool = True

    @property
    def folder(self) -> Path:
        return self.root_folder

    @property
    def url(self) -> str:
        return str(self.root_folder)

    def check_writer(self) -> None:
        if not self.writer:
            raise read_only(self.url)

    def artifact(self, rel: str, record: str = RECORD) -> LocalArtifact:
        return LocalArtifact(self, rel.strip("/"), record)

    def artifact_at(self, target: Path, record: str = RECORD) -> LocalArtifact:
        """The artifact in the folder ``target``: under the root, or anywhere else (a folder is
        its own record's home, so a plain export target needs no root around it)."""
        target = Path(target).absolute()
        if target.is_relative_to(self.root_folder):
            return self.artifact(target.relative_to(self.root_folder).as_posix(), record)
        return LocalArtifact(self, target.as_posix(), record, at=target)

    def published(self, prefix: str, depth: int) -> dict[str, dict]:
        base = self.root_folder / prefix
        found = {}
        for meta in sorted(base.glob("/".join(["[!.]*"] * depth + [RECORD]))):
            record = read_json(meta)
            if record:
                found[meta.parent.relative_to(self.root_folder).as_posix()] = record
        return found

    def table_files(self, prefix: str, depth: int, file: str) -> str | None:
        pattern = "/".join([prefix.strip("/"), *(["*"] * (depth - 1)), "[!.]*", file])
        return (
            str(self.root_folder / pattern) if next(self.root_folder.glob(pattern), None) else None
        )

    def exists(self) -> bool:
        return self.root_folder.is_dir()

    def has_any(self, prefixes: Iterable[str]) -> bool:
        return any((self.root_folder / p).is_dir() for p in prefixes)

    def read_bytes(self, rel: str) -> bytes | None:
        path = self.root_folder / rel
        try:
            check_document_size(path.stat().st_size, str(path))
            return path.read_bytes()
        except FileNotFoundError:
            return None

    def write_text(self, rel: str, text: str | None, *, expected: str | None) -> None:
        self.check_writer()
        path = self.root_folder / rel
        if self.read_text(rel) != expected:
            raise ConcurrentWriteError(
                "the document changed since it was read", subject=str(path), fix="try again"
            )
        if text is None:
            path.unlink(missing_ok=True)
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = staging_path(path)
        tmp.write_text(text)
        os.replace(tmp, path)

    def location(self, rel: str) -> str:
        return str(self.root_folder / rel)

    def duckdb_files(self) -> None:
        return None  # DuckDB reads local files itself

    def keep_views(
        self, rel: str, statements: Callable[[], list[str]], key: str, rebuild: bool = False
    ) -> Path | None:
        """``rel`` as a DuckDB file of views, rebuilt aside and renamed into place when ``key``
        changed (readers holding the old file keep working); it holds no data, only views."""
        import duckdb

        path = self.root_folder / rel
        if not rebuild and _views_key(path) == key:
            return path
        self.check_writer()
        with write_lock(path):  # also removes what a killed builder left aside
            if not rebuild and _views_key(path) == key:
                return path  # another writer built it while this one waited
            with staged(path, is_dir=False) as tmp:
                con = duckdb.connect(str(tmp))
                try:
                    for statement in statements():
                        con.execute(statement)
                    con.execute(
                        "CREATE OR REPLACE TABLE catalog_info AS SELECT ? AS key, ? AS built_at",
                        [key, datetime.now(UTC)],
                    )
                finally:
                    con.close()
                Path(str(tmp) + ".wal").unlink(missing_ok=True)
        return path

    def reader(self) -> LocalRoot:
        return LocalRoot(self.root_folder, writer=False)


def _views_key(path: Path) -> str | None:
    """The key a DuckDB file of views was built for, or None (no file, another layout)."""
    import duckdb

    if not path.exists():
        return None
    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error:
        return None
    try:
        row = con.execute("SELECT key FROM catalog_info").fetchone()
    except duckdb.Error:
        return None
    finally:
        con.close()
    return None if row is None else str(row[0])


def open_local(folder: str, *, writer: bool) -> LocalRoot:
    """The folder ``folder`` (absolute, as :func:`~episode_warehouse.storage.root_setting`
    gives it) as a root.

    Raises:
        ConfigError: it is a file.
    """
    from episode_warehouse.errors import ConfigError

    path = Path(folder)
    if path.exists() and not path.is_dir():
        raise ConfigError(
            "the warehouse root is a file, not a folder",
            subject=str(path),
            fix=f"set {ROOT_ENV} to a folder",
        )
    return LocalRoot(path, writer=writer)
