"""The filesystem DuckDB reads a bucket root's files with.

DuckDB 2.0.1's httpfs cannot be installed offline, so a connection reads ``gs://`` through an
fsspec filesystem (gcsfs) registered on it (:meth:`BucketRoot.register_files`). The views name
exactly the objects the partitions' records list: stale versions and a killed writer's objects
are never read.
"""

from __future__ import annotations

import functools


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
