"""What a blob store says of one file (:class:`BlobInfo`), what its downloads count
(:class:`DownloadStats`), and the GCS-style crc32c: shared by every store (``blobstore``,
``hub``)."""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import google_crc32c

_CHUNK = 8 << 20
# how a versioned store (the hub) picks the revision of a dataset where none was asked for:
# (the store's client, the dataset's repo) -> revision
ChooseRevision = Callable[[Any, str], str]


@dataclass(frozen=True)
class BlobInfo:
    """One file of a store: ``name`` relative to the store's prefix.

    ``crc32c`` is the base64 big-endian CRC32C GCS reports ("" for a local file or the hub:
    computed when copied); ``generation`` is the GCS generation, a local file's mtime in
    nanoseconds, or on the hub the file's content id (the LFS sha256, else the git blob id), so
    a new revision changes the generation of the files it changed only.
    """

    name: str
    size: int
    crc32c: str
    generation: str

    def to_json(self) -> dict:
        return {"size": self.size, "crc32c": self.crc32c, "generation": self.generation}


@dataclass
class DownloadStats:
    """Counters for the reliability report: retries, resumed bytes, rejected corrupt copies."""

    retries: int = 0
    resumed_bytes: int = 0
    rejected_corrupt: int = 0
    downloaded_bytes: int = 0


def crc32c_b64(checksum: google_crc32c.Checksum) -> str:
    return base64.b64encode(checksum.digest()).decode()


def file_crc32c(path: Path) -> str:
    """The GCS-style crc32c (base64, big-endian) of a local file."""
    checksum = google_crc32c.Checksum()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            checksum.update(chunk)
    return crc32c_b64(checksum)
