"""Where a bucket root's objects are: the bucket, the prefix, the API endpoint, the reader cache."""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from pathlib import Path

from episode_warehouse.blobstore import GcsBlobStore
from episode_warehouse.gcs import split_gs_url
from episode_warehouse.retry import RetryPolicy
from episode_warehouse.settings import ROOT_ENV, Settings


@dataclass(frozen=True)
class Bucket:
    """``gs://bucket/prefix``: the warehouse's artifacts are objects under ``prefix/``."""

    bucket: str
    prefix: str
    endpoint: str | None  # the GCS API (an emulator); None: GCS itself
    cache_base: Path  # where trainers keep downloaded TEDs (Settings.cache)

    @classmethod
    def parse(cls, url: str, settings: Settings | None = None) -> Bucket:
        """Raises ConfigError for anything but ``gs://BUCKET[/PREFIX]``; the endpoint and cache
        come from ``settings`` (default: resolved from the environment now)."""
        bucket, prefix = split_gs_url(url, setting=ROOT_ENV, kind="warehouse root")
        settings = settings or Settings.from_env()
        return cls(bucket, prefix, settings.gcs_endpoint, settings.cache)

    @property
    def url(self) -> str:
        return f"gs://{self.bucket}/{self.prefix}".rstrip("/")

    def store(self) -> GcsBlobStore:
        """The store of this root's objects (one client per process and root)."""
        return _store(self.bucket, self.prefix, self.endpoint)

    def local_copy(self, base: Path) -> Path:
        """The local folder the stages build in: ``<bucket>-<hash of the URL>`` under ``base``
        (``Settings.local_copy``), so two roots never share one."""
        tag = hashlib.sha256(self.url.encode()).hexdigest()[:12]
        return base / f"{self.bucket}-{tag}"

    def cache(self) -> Path:
        """Where trainers keep TEDs downloaded from this root, one folder per bucket and
        prefix under ``Settings.cache``."""
        return self.cache_base / self.bucket / (self.prefix or "_")


@functools.lru_cache(maxsize=16)
def _store(bucket: str, prefix: str, endpoint: str | None) -> GcsBlobStore:
    return GcsBlobStore(bucket, prefix, RetryPolicy(), endpoint)
