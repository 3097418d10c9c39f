"""Where every artifact lives under the warehouse root (``EPISODE_WAREHOUSE_ROOT``)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from episode_warehouse.errors import ConfigError, PartitionKeyError
from episode_warehouse.gcs import refuse_near_url

if TYPE_CHECKING:
    from episode_warehouse.bucket.root import BucketRoot

ROOT_ENV = "EPISODE_WAREHOUSE_ROOT"
DEFAULT_ROOT = "warehouse-data"
# a source folder: a registered source's name (episode_warehouse.sources.registry checks which)
_SOURCE_RE = re.compile(r"^[a-z][a-z0-9_]{0,31}$")


def is_bucket_root(value: str | os.PathLike) -> bool:
    """Whether a warehouse root setting names object storage (``gs://``), the one place that
    tells; :meth:`WarehouseLayout.from_root` then checks the URL."""
    return str(value).startswith("gs://")


@dataclass(frozen=True)
class WarehouseLayout:
    """Paths of the artifacts: ``raw/``, ``decoded/``, ``ted/``, ``catalog/``, ``lerobot/``.

    With a ``gs://`` root, ``root`` is the local scratch copy the stages build in and
    ``bucket`` the root whose records count (see :mod:`episode_warehouse.bucket`).
    """

    root: Path
    bucket: BucketRoot | None = None

    def __post_init__(self) -> None:
        if self.bucket is None:  # a scratch folder given as a path still publishes to its bucket
            from episode_warehouse.bucket.root import bucket_of

            found = bucket_of(self.root)
            if found is not None and found[1] == ".":
                object.__setattr__(self, "bucket", found[0])

    @classmethod
    def from_root(
        cls, root: str | os.PathLike | None = None, *, local_copy: str | os.PathLike | None = None
    ) -> WarehouseLayout:
        """``root``, else ``$EPISODE_WAREHOUSE_ROOT``, else ``./warehouse-data``: a local folder
        or ``gs://BUCKET/PREFIX`` (built in its local copy under ``local_copy``, else
        ``$EPISODE_WAREHOUSE_LOCAL_COPY``, see :meth:`BucketRoot.local_copy`)."""
        value = root if root is not None else os.environ.get(ROOT_ENV) or DEFAULT_ROOT
        if is_bucket_root(value):
            from episode_warehouse.bucket.root import BucketRoot, bind

            bucket = BucketRoot.parse(str(value))
            copy = bucket.local_copy(local_copy)
            bind(copy, bucket)
            return cls(copy, bucket)
        refuse_near_url(str(value), setting=ROOT_ENV, kind="warehouse root")
        path = Path(value).expanduser()
        if path.exists() and not path.is_dir():
            raise ConfigError(
                "the warehouse root is a file, not a folder",
                subject=str(path),
                fix=f"set {ROOT_ENV} to a folder",
            )
        return cls(path.resolve())

    def _part(self, stage: str, source: str, partition: str) -> Path:
        if not _SOURCE_RE.match(source or ""):
            raise PartitionKeyError(
                "not a source name (lowercase letters, digits, '_')", subject=repr(source)
            )
        parts = partition.split("/")
        if not partition or any(p in ("", ".", "..") for p in parts) or "\\" in partition:
            raise PartitionKeyError("not a valid partition key", subject=repr(partition))
        return self.root.joinpath(stage, source, *parts)

    def raw_dir(self, source: str, partition: str) -> Path:
        return self._part("raw", source, partition)

    def decoded_dir(self, source: str, partition: str) -> Path:
        return self._part("decoded", source, partition)

    def ted_dir(self, source: str, partition: str) -> Path:
        return self._part("ted", source, partition)

    def lerobot_dir(self, name: str) -> Path:
        return self.root / "lerobot" / name

    @property
    def catalog_dir(self) -> Path:
        return self.root / "catalog"

    @property
    def url(self) -> str:
        """The root as the user gave it: the bucket URL, or the local folder."""
        return self.bucket.url if self.bucket is not None else str(self.root)
