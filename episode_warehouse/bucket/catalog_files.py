"""The catalog's Parquet files in a bucket root, and the filesystem DuckDB reads them with.

Each partition's rows are an artifact of their own (``catalog/rows/<source>/<partition>``), so
the files a query may read are exactly those the partitions' records list: stale versions and
a killed writer's objects are never read. DuckDB 2.0.1's httpfs cannot be installed offline, so
the connection reads ``gs://`` through an fsspec filesystem (gcsfs) registered on it.
"""

from __future__ import annotations

import functools
from concurrent.futures import ThreadPoolExecutor

from episode_warehouse.bucket.artifact import PUBLISHED, TRANSFER_THREADS, RemoteArtifact
from episode_warehouse.bucket.root import BucketRoot

RECORD = "meta.json"


def partition_records(root: BucketRoot, folder: str) -> dict[str, dict]:
    """``catalog/<folder>/<source>/<partition>`` -> its published record, for every artifact of
    one catalog folder (``rows``, ``statistics``); one listing, then the records in parallel."""
    base = f"catalog/{folder}/"
    rels = sorted(
        info.name.removesuffix(f"/{RECORD}")
        for info in root.store().list(base)
        if info.name.endswith(f"/{RECORD}") and info.name[len(base) :].count("/") == 2
    )

    def read(rel: str) -> tuple[str, dict]:
        return rel, RemoteArtifact(root, rel).read()[0]

    with ThreadPoolExecutor(TRANSFER_THREADS) as pool:
        return {rel: record for rel, record in pool.map(read, rels) if record.get(PUBLISHED)}


def table_urls(root: BucketRoot, records: dict[str, dict], file_name: str) -> list[str]:
    """The ``gs://`` URLs of ``file_name`` in each record that lists it."""
    return [
        f"{root.url}/{rel}/{record[PUBLISHED]['prefix']}/{file_name}"
        for rel, record in sorted(records.items())
        if file_name in record[PUBLISHED]["files"]
    ]


@functools.lru_cache(maxsize=4)
def filesystem(endpoint: str | None, *, read_only: bool = False):
    """A gcsfs filesystem for ``endpoint`` (an emulator, ``BucketRoot.endpoint``) or GCS
    (default credentials, else anonymous); ``read_only``: every call that would write or delete
    raises ``PermissionError`` (what user SQL reads the catalog through)."""
    import gcsfs

    cls = _read_only_class(gcsfs.GCSFileSystem) if read_only else gcsfs.GCSFileSystem
    if endpoint:
        return cls(endpoint_url=endpoint, token="anon")
    return cls()


_WRITES = (
    "rm", "rm_file", "_rm", "_rm_file", "mkdir", "makedirs", "_mkdir", "_makedirs", "mv",
    "_mv", "put", "put_file", "_put", "_put_file", "pipe", "pipe_file", "_pipe", "_pipe_file",
    "touch", "copy", "cp_file", "_cp_file", "_copy", "rmdir", "_rmdir", "merge", "_merge",
)  # fmt: skip


def _refuse(self, *args, **kwargs):
    raise PermissionError("the catalog is read-only here")


@functools.cache
def _read_only_class(base: type) -> type:
    class ReadOnly(base):
        def open(self, path, mode="rb", *args, **kwargs):
            if set(mode) - {"r", "b", "t"}:
                raise PermissionError(f"{path}: the catalog is read-only here")
            return super().open(path, mode, *args, **kwargs)

    for name in _WRITES:
        if hasattr(base, name):
            setattr(ReadOnly, name, _refuse)
    ReadOnly.__name__ = f"ReadOnly{base.__name__}"
    return ReadOnly
