"""Where every artifact lives under the warehouse root (``EPISODE_WAREHOUSE_ROOT``)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from episode_warehouse.errors import ConfigError, PartitionKeyError

ROOT_ENV = "EPISODE_WAREHOUSE_ROOT"
DEFAULT_ROOT = "warehouse-data"
SOURCES = ("atari", "openx", "lerobot")


@dataclass(frozen=True)
class WarehouseLayout:
    """Paths of the artifacts: ``raw/``, ``decoded/``, ``ted/``, ``catalog/``, ``lerobot/``."""

    root: Path

    @classmethod
    def from_root(cls, root: str | os.PathLike | None = None) -> WarehouseLayout:
        """``root``, else ``$EPISODE_WAREHOUSE_ROOT``, else ``./warehouse-data``."""
        value = root if root is not None else os.environ.get(ROOT_ENV) or DEFAULT_ROOT
        _refuse_url(str(value))
        path = Path(value).expanduser()
        if path.exists() and not path.is_dir():
            raise ConfigError(
                "the warehouse root is a file, not a folder",
                subject=str(path),
                fix=f"set {ROOT_ENV} to a folder",
            )
        return cls(path.resolve())

    def _part(self, stage: str, source: str, partition: str) -> Path:
        if source not in SOURCES:
            raise PartitionKeyError(
                f"unknown source (expected one of {SOURCES})", subject=repr(source)
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


def _refuse_url(value: str) -> None:
    """A URL root is refused by name: taken for a path, ``gs://b/p`` would become a local
    folder ``./gs:/b/p`` that fills up unnoticed."""
    scheme, sep, _ = value.partition("://")
    if not sep or not scheme.replace("+", "").replace("-", "").replace(".", "").isalnum():
        return
    if scheme == "gs":
        raise ConfigError(
            "an object-storage root is not supported by this version (artifacts are built and "
            "published in a local folder)",
            subject=value,
            fix=f"set {ROOT_ENV} to a local folder, or to a gcsfuse mount of the bucket",
        )
    raise ConfigError(
        f"the warehouse root must be a local folder, not a {scheme}:// URL",
        subject=value,
        fix=f"set {ROOT_ENV} to a local folder",
    )
