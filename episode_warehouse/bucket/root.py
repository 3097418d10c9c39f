"""Where a bucket root lives: the URL, its local scratch copy, its trainer cache.

``WarehouseLayout.from_root("gs://bucket/prefix")`` lays the artifacts out under a scratch folder
as it does under a local root, and :func:`bind` marks that folder with the bucket it mirrors
(``.bucket-root.json``). :func:`bucket_of` finds the mark from any artifact path, so every
function of the one publish path (``build_if_changed``, ``published``, ``checkout``) knows
without being told that an artifact's truth is in the bucket.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from episode_warehouse.blobstore import GcsBlobStore
from episode_warehouse.errors import ConfigError
from episode_warehouse.gcs import EMULATOR_ENV, split_gs_url
from episode_warehouse.retry import RetryPolicy

LOCAL_COPY_ENV = "EPISODE_WAREHOUSE_LOCAL_COPY"
# before LOCAL_COPY_ENV had its own name, the PNG scratch setting also meant this; still read
LEGACY_LOCAL_COPY_ENV = "EPISODE_WAREHOUSE_SCRATCH"
CACHE_ENV = "EPISODE_WAREHOUSE_CACHE"
MARKER = ".bucket-root.json"
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BucketRoot:
    """``gs://bucket/prefix``: the warehouse's artifacts are objects under ``prefix/``."""

    bucket: str
    prefix: str

    @classmethod
    def parse(cls, url: str) -> BucketRoot:
        """Raises ConfigError for anything but ``gs://BUCKET[/PREFIX]``."""
        bucket, prefix = split_gs_url(url, setting="EPISODE_WAREHOUSE_ROOT", kind="warehouse root")
        return cls(bucket, prefix)

    @property
    def url(self) -> str:
        return f"gs://{self.bucket}/{self.prefix}".rstrip("/")

    def store(self) -> GcsBlobStore:
        """The store of this root's objects (one client per process and root)."""
        return _store(self.bucket, self.prefix, os.environ.get(EMULATOR_ENV) or None)

    def local_copy(self, base: str | os.PathLike | None = None) -> Path:
        """The local folder the stages build in: ``<bucket>-<hash of the URL>`` under ``base``
        (a resource's value), else ``$EPISODE_WAREHOUSE_LOCAL_COPY``, else the system's
        temporary directory's ``episode-warehouse-scratch``, so two roots never share one."""
        tag = hashlib.sha256(self.url.encode()).hexdigest()[:12]
        return local_copy_base(base) / f"{self.bucket}-{tag}"

    def cache(self) -> Path:
        """Where trainers keep TEDs downloaded from this root (``$EPISODE_WAREHOUSE_CACHE``,
        default ``~/.cache/episode-warehouse``), one folder per bucket and prefix."""
        base = os.environ.get(CACHE_ENV) or "~/.cache/episode-warehouse"
        return Path(base).expanduser().resolve() / self.bucket / (self.prefix or "_")


def local_copy_base(base: str | os.PathLike | None = None) -> Path:
    """Where bucket roots get their local copies (see :meth:`BucketRoot.local_copy`)."""
    if not base:
        base = os.environ.get(LOCAL_COPY_ENV)
    if not base and os.environ.get(LEGACY_LOCAL_COPY_ENV):
        base = os.environ[LEGACY_LOCAL_COPY_ENV]
        _warn_legacy_once()
    if not base:
        base = Path(tempfile.gettempdir()) / "episode-warehouse-scratch"
    return Path(base).expanduser().resolve()


@functools.lru_cache(maxsize=1)
def _warn_legacy_once() -> None:
    log.warning(
        "%s set and %s not: a gs:// root's local copy goes under %s as before; set %s for it "
        "(%s now only places an export's PNG frames)",
        LEGACY_LOCAL_COPY_ENV, LOCAL_COPY_ENV, os.environ[LEGACY_LOCAL_COPY_ENV],
        LOCAL_COPY_ENV, LEGACY_LOCAL_COPY_ENV,
    )  # fmt: skip


@functools.lru_cache(maxsize=16)
def _store(bucket: str, prefix: str, endpoint: str | None) -> GcsBlobStore:
    return GcsBlobStore(bucket, prefix, RetryPolicy(), endpoint)


def bind(scratch: Path, root: BucketRoot) -> None:
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
    tmp.write_text(json.dumps({"url": root.url}))
    os.replace(tmp, marker)
    _bound.cache_clear()


def bucket_of(path: Path) -> tuple[BucketRoot, str] | None:
    """The bucket root whose scratch folder holds ``path``, and the path's name relative to
    it (``ted/atari/Pong/1``); None for a path of a local root."""
    path = Path(path).absolute()
    for folder in (path, *path.parents):
        root = _bound(folder)
        if root is not None:
            return root, path.relative_to(folder).as_posix()
    return None


@functools.lru_cache(maxsize=1024)
def _bound(folder: Path) -> BucketRoot | None:
    marker = folder / MARKER
    if not marker.is_file():
        return None
    return BucketRoot.parse(json.loads(marker.read_text())["url"])
