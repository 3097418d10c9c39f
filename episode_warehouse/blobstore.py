"""Read a file tree from a ``gs://bucket/prefix`` URL or a local folder, the same way.

``open_blob_store(url)`` gives a :class:`BlobStore` with ``list(prefix)`` and
``download(blob, dest)``. Downloads resume partial files, verify size and crc32c, retry
transient faults with exponential backoff inside a bounded budget, and publish by rename, so a
corrupt or partial file is never visible under its final name.

GCS access: with ``STORAGE_EMULATOR_HOST`` set, google-cloud-storage talks to that emulator
anonymously; otherwise application-default credentials are used when present and an anonymous
client (public buckets) when not.
"""

from __future__ import annotations

import base64
import logging
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import google_crc32c

from episode_warehouse.errors import ConfigError, CorruptInputError, SourceUnavailableError

log = logging.getLogger(__name__)

PART_SUFFIX = ".part"


@dataclass(frozen=True)
class BlobInfo:
    """One file of a store: ``name`` relative to the store's prefix."""

    name: str
    size: int
    crc32c: str  # base64 of the big-endian CRC32C, as GCS reports it
    generation: str  # GCS generation, or "<mtime_ns>" for a local file

    def to_json(self) -> dict:
        return {"size": self.size, "crc32c": self.crc32c, "generation": self.generation}


@dataclass
class RetryPolicy:
    """At most ``attempts`` tries per file, sleeping ``base_s * 2**k`` (capped) in between."""

    attempts: int = 6
    base_s: float = 0.25
    max_s: float = 8.0
    timeout_s: float = 60.0


@dataclass
class DownloadStats:
    """Counters for the reliability report: retries, resumed bytes, rejected corrupt copies."""

    retries: int = 0
    resumed_bytes: int = 0
    rejected_corrupt: int = 0
    downloaded_bytes: int = 0


def file_crc32c(path: Path) -> str:
    """The GCS-style crc32c (base64, big-endian) of a local file."""
    checksum = google_crc32c.Checksum()
    with open(path, "rb") as fh:
        while chunk := fh.read(8 << 20):
            checksum.update(chunk)
    return base64.b64encode(checksum.digest()).decode()


class BlobStore(Protocol):
    url: str

    def list(self, prefix: str) -> list[BlobInfo]: ...

    def download(self, blob: BlobInfo, dest: Path, stats: DownloadStats | None = None) -> None: ...


def _finish(part: Path, blob: BlobInfo, dest: Path, stats: DownloadStats) -> bool:
    """Verify a complete ``.part`` file; publish it on success, delete it on mismatch."""
    crc = file_crc32c(part)
    if part.stat().st_size == blob.size and crc == blob.crc32c:
        os.replace(part, dest)
        return True
    stats.rejected_corrupt += 1
    log.warning(
        "%s: size/crc32c mismatch (got %d bytes, crc %s; want %d, %s); retrying",
        blob.name,
        part.stat().st_size,
        crc,
        blob.size,
        blob.crc32c,
    )
    part.unlink(missing_ok=True)
    return False


class LocalBlobStore:
    """A local folder laid out like the bucket (``<Game>/<run>/replay_logs/...``)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.url = str(self.root)
        if not self.root.is_dir():
            raise SourceUnavailableError(
                "the local mirror folder does not exist",
                subject=str(self.root),
                fix="point the source URL at an existing folder or a gs:// prefix",
            )

    def list(self, prefix: str) -> list[BlobInfo]:
        base = self.root / prefix
        if not base.is_dir():
            return []
        out = []
        for path in sorted(p for p in base.rglob("*") if p.is_file()):
            st = path.stat()
            out.append(
                BlobInfo(
                    str(path.relative_to(self.root)),
                    st.st_size,
                    _cached_crc(path, st),
                    str(st.st_mtime_ns),
                )
            )
        return out

    def download(self, blob: BlobInfo, dest: Path, stats: DownloadStats | None = None) -> None:
        stats = stats or DownloadStats()
        part = dest.with_name(dest.name + PART_SUFFIX)
        shutil.copyfile(self.root / blob.name, part)
        stats.downloaded_bytes += blob.size
        if not _finish(part, blob, dest, stats):
            raise CorruptInputError(
                "the copy does not match the source's size and crc32c",
                subject=str(self.root / blob.name),
                fix="the file changed while it was copied; retry",
            )


_CRC_CACHE: dict[tuple[str, int, int], str] = {}


def _cached_crc(path: Path, st: os.stat_result) -> str:
    key = (str(path), st.st_size, st.st_mtime_ns)
    if key not in _CRC_CACHE:
        _CRC_CACHE[key] = file_crc32c(path)
    return _CRC_CACHE[key]


class GcsBlobStore:
    """A ``gs://bucket/prefix`` read with google-cloud-storage."""

    def __init__(self, bucket: str, prefix: str, retry: RetryPolicy | None = None) -> None:
        self.bucket_name = bucket
        self.prefix = prefix.strip("/")
        self.url = f"gs://{bucket}/{self.prefix}".rstrip("/")
        self.retry = retry or RetryPolicy()
        self._client = None

    @property
    def client(self):
        if self._client is None:
            from google.auth.exceptions import DefaultCredentialsError
            from google.cloud import storage

            if os.environ.get("STORAGE_EMULATOR_HOST"):
                self._client = storage.Client(project="episode-warehouse")
            else:
                try:
                    self._client = storage.Client()
                except (DefaultCredentialsError, OSError):
                    self._client = storage.Client.create_anonymous_client()
        return self._client

    def _key(self, name: str) -> str:
        return f"{self.prefix}/{name}" if self.prefix else name

    def list(self, prefix: str) -> list[BlobInfo]:
        from google.api_core import exceptions as gexc
        from google.api_core.retry import Retry

        full = self._key(prefix)
        retry = Retry(
            initial=self.retry.base_s, maximum=self.retry.max_s, timeout=self.retry.timeout_s
        )
        try:
            blobs = list(
                self.client.list_blobs(
                    self.bucket_name, prefix=full, retry=retry, timeout=self.retry.timeout_s
                )
            )
        except gexc.NotFound as exc:
            raise SourceUnavailableError(
                "the bucket does not exist",
                subject=self.url,
                fix="check the bucket name in the source URL",
            ) from exc
        except gexc.Forbidden as exc:
            raise SourceUnavailableError(
                "access denied (HTTP 403); the public Atari bucket is gone",
                subject=self.url,
                fix="point ATARI_REPLAY_URL at your own mirror (gs://... or a local folder)",
            ) from exc
        except Exception as exc:  # noqa: BLE001 - network errors have many types; re-raised typed
            root = exc
            while root.__cause__ is not None or root.__context__ is not None:
                root = root.__cause__ or root.__context__
            raise SourceUnavailableError(
                f"cannot list {full!r} ({type(root).__name__}: {str(root)[:160]})",
                subject=self.url,
                fix="check the URL, your network, and STORAGE_EMULATOR_HOST if you use one",
            ) from exc
        n = len(self.prefix) + 1 if self.prefix else 0
        return [
            BlobInfo(b.name[n:], int(b.size), b.crc32c or "", str(b.generation))
            for b in blobs
            if not b.name.endswith("/")
        ]

    def download(self, blob: BlobInfo, dest: Path, stats: DownloadStats | None = None) -> None:
        """Download with resume; raises SourceUnavailableError when the budget is spent."""
        stats = stats or DownloadStats()
        part = dest.with_name(dest.name + PART_SUFFIX)
        bucket = self.client.bucket(self.bucket_name)
        last_error: Exception | None = None
        for attempt in range(self.retry.attempts):
            if attempt:
                stats.retries += 1
                time.sleep(min(self.retry.max_s, self.retry.base_s * 2 ** (attempt - 1)))
            offset = part.stat().st_size if part.exists() else 0
            if offset > blob.size:
                part.unlink()
                offset = 0
            try:
                if offset < blob.size:
                    stats.resumed_bytes += offset
                    gblob = bucket.blob(self._key(blob.name), generation=int(blob.generation))
                    with open(part, "ab") as fh:
                        gblob.download_to_file(
                            fh,
                            start=offset or None,
                            raw_download=True,
                            checksum=None,
                            retry=None,
                            timeout=self.retry.timeout_s,
                        )
                    stats.downloaded_bytes += part.stat().st_size - offset
                if _finish(part, blob, dest, stats):
                    return
            except Exception as exc:  # noqa: BLE001 - transient network faults, retried
                last_error = exc
                log.warning(
                    "%s: attempt %d failed (%s: %s)",
                    blob.name,
                    attempt + 1,
                    type(exc).__name__,
                    exc,
                )
        raise SourceUnavailableError(
            f"download failed after {self.retry.attempts} attempts ({last_error})",
            subject=f"{self.url}/{blob.name}",
            fix="check the source and retry; the partial file is kept and resumed next time",
        )


def open_blob_store(url: str, retry: RetryPolicy | None = None) -> BlobStore:
    """A store for ``gs://bucket[/prefix]``, ``file:///path`` or a plain local path.

    Raises:
        ConfigError: the URL is malformed or of an unsupported scheme.
        SourceUnavailableError: a local folder that does not exist.
    """
    if url.startswith("gs://"):
        bucket, _, prefix = url[5:].partition("/")
        if not bucket or any(c in bucket for c in " \\?#"):
            raise ConfigError(
                "malformed gs:// URL (no bucket name)",
                subject=repr(url),
                fix="write it as gs://BUCKET/PREFIX, e.g. gs://atari-replay-datasets/dqn",
            )
        return GcsBlobStore(bucket, prefix, retry)
    if url.startswith("file://"):
        return LocalBlobStore(Path(url[7:]))
    if "://" in url:
        raise ConfigError(
            f"unsupported URL scheme {url.split('://')[0]!r}",
            subject=repr(url),
            fix="use gs://BUCKET/PREFIX or a local folder",
        )
    if not url:
        raise ConfigError("empty source URL", fix="set it to gs://BUCKET/PREFIX or a folder")
    return LocalBlobStore(Path(url).expanduser())
