"""A ``gs://bucket/prefix`` warehouse root.

A writer builds each artifact in its *local copy* (a folder under ``EPISODE_WAREHOUSE_LOCAL_COPY``
that :func:`bind` marks with the bucket it mirrors, ``.bucket-root.json``, so that one folder
never serves two roots) and publishes it to the bucket (:mod:`.artifact`: data objects first,
the record last with a generation precondition). A reader has no local copy: it reads records
and byte ranges from the bucket, and fetches whole artifacts into its cache
(``EPISODE_WAREHOUSE_CACHE``), never into the writer's folder.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from episode_warehouse.errors import ConcurrentWriteError, ConfigError
from episode_warehouse.guards.names import checked_name, no_links_below
from episode_warehouse.records import RECORD
from episode_warehouse.settings import LOCAL_COPY_ENV, Settings
from episode_warehouse.storage.base import Root, check_document_size, read_only
from episode_warehouse.storage.bucket.artifact import PUBLISHED, RemoteArtifact
from episode_warehouse.storage.bucket.objects import Bucket
from episode_warehouse.threads import TRANSFER_THREADS

MARKER = ".bucket-root.json"


@dataclass(frozen=True)
class BucketRoot(Root):
    """``bucket``'s artifacts; ``copy``: the writer's local copy (None: a reader's root)."""

    bucket: Bucket
    copy: Path | None = None

    @classmethod
    def open(cls, url: str, settings: Settings, *, writer: bool) -> BucketRoot:
        """The root ``gs://BUCKET[/PREFIX]``; a writer's local copy is bound under
        ``settings.local_copy`` (see :meth:`Bucket.local_copy`), a reader's root writes nothing.

        Raises:
            ConfigError: not a bucket URL, or the folder is the copy of another root.
        """
        bucket = Bucket.parse(url, settings)
        if not writer:
            return cls(bucket)
        folder = no_links_below(
            settings.local_copy, bucket.local_copy(settings.local_copy), setting=LOCAL_COPY_ENV
        )
        bind(folder, bucket)
        return cls(bucket, folder)

    @property
    def url(self) -> str:
        return self.bucket.url

    @property
    def writer(self) -> bool:
        return self.copy is not None

    @property
    def folder(self) -> Path:
        if self.copy is None:
            raise read_only(self.url)
        return self.copy

    def artifact(self, rel: str, record: str = RECORD) -> RemoteArtifact:
        rel = rel.strip("/")
        local = None if self.copy is None else self.copy / rel
        return RemoteArtifact(self.bucket, rel, record, local, writable=self.writer)

    def published(self, prefix: str, depth: int) -> dict[str, dict]:
        """One listing, then the records in parallel."""
        base = f"{prefix.strip('/')}/"
        rels = sorted(
            info.name.removesuffix(f"/{RECORD}")
            for info in self.bucket.store().list(base)
            if info.name.endswith(f"/{RECORD}") and info.name[len(base) :].count("/") == depth
            and not any(p.startswith(".") for p in info.name[len(base) :].split("/"))
        )  # fmt: skip

        def read(rel: str) -> tuple[str, dict]:
            return rel, self.artifact(rel).read()[0]

        with ThreadPoolExecutor(TRANSFER_THREADS) as pool:
            return {rel: rec for rel, rec in pool.map(read, rels) if rec.get(PUBLISHED)}

    def table_files(self, prefix: str, depth: int, file: str) -> list[str] | None:
        files = [
            self.artifact(rel).file_url(record, file)
            for rel, record in sorted(self.published(prefix, depth).items())
            if file in record[PUBLISHED]["files"]
        ]
        return files or None

    def exists(self) -> bool:
        return True  # a missing bucket is the first read's error, naming it

    def has_any(self, prefixes: Iterable[str]) -> bool:
        store = self.bucket.store()
        return any(next(iter(store.list(f"{p.strip('/')}/")), None) is not None for p in prefixes)

    def _document(self, rel: str):
        return self.bucket.store(), checked_name(rel, subject=self.url, what="document name")

    def read_bytes(self, rel: str) -> bytes | None:
        store, name = self._document(rel)
        info = store.stat(name)
        if info is None:
            return None
        check_document_size(info.size, f"{self.url}/{name}")
        return store.read_bytes(name, info.generation)

    def write_text(self, rel: str, text: str | None, *, expected: str | None) -> None:
        """Replaced with a generation precondition: the version read, or none."""
        from google.api_core.exceptions import PreconditionFailed

        if not self.writer:
            raise read_only(self.url, "to write its documents")
        store, name = self._document(rel)
        info = store.stat(name)
        now = None if info is None else store.read_bytes(name, info.generation).decode()
        if now != expected:
            raise ConcurrentWriteError(
                "the document changed since it was read", subject=f"{self.url}/{name}",
                fix="try again",
            )  # fmt: skip
        generation = 0 if info is None else int(info.generation)
        try:
            if text is None:
                if info is not None:
                    store.delete(name, info.generation)
                return
            store.upload(name, data=text.encode(), if_generation_match=generation)
        except PreconditionFailed:
            raise ConcurrentWriteError(
                "the document changed while it was written", subject=f"{self.url}/{name}",
                fix="try again",
            ) from None  # fmt: skip

    def location(self, rel: str) -> str:
        return f"{self.url}/{rel}"

    def duckdb_files(self) -> tuple[str, str]:
        return ("gcs", self.bucket.endpoint or "")

    def keep_views(
        self, rel: str, statements: Callable[[], list[str]], key: str, rebuild: bool = False
    ) -> Path | None:
        return None  # the views name each version's objects: `warehouse sql` makes them anew

    def reader(self) -> BucketRoot:
        return BucketRoot(self.bucket)


def bind(scratch: Path, root: Bucket) -> None:
    """Mark ``scratch`` as the local copy of ``root``.

    Raises:
        ConfigError: the folder already mirrors another bucket root.
    """
    marker = scratch / MARKER
    if marker.is_file():
        bound = json.loads(marker.read_text()).get("url")
        if bound != root.url:
            raise ConfigError(
                f"this scratch folder is the local copy of {bound}, not of {root.url}",
                subject=str(scratch),
                fix=f"give each bucket root its own {LOCAL_COPY_ENV}",
            )
        return
    scratch.mkdir(parents=True, exist_ok=True)
    tmp = marker.with_name(f"{MARKER}.{os.getpid()}")
    tmp.write_text(json.dumps({"url": root.url}, allow_nan=False))
    os.replace(tmp, marker)
