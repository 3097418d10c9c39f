"""Where every artifact lives under the warehouse root (``EPISODE_WAREHOUSE_ROOT``)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from episode_warehouse.errors import PartitionKeyError
from episode_warehouse.partition_keys import check_partition_key, check_source_name
from episode_warehouse.settings import Settings
from episode_warehouse.storage import Root, parse_root
from episode_warehouse.storage.local import LocalRoot


def artifact_name(stage: str, source: str, partition: str) -> str:
    """The name under the root of a partition's artifact of ``stage`` (``ted/atari/Pong/1``),
    after checking the source name and the partition key.

    Raises:
        PartitionKeyError: naming the source or the key.
    """
    check_source_name(source)
    if not isinstance(partition, str) or not partition:
        raise PartitionKeyError("not a valid partition key", subject=repr(partition))
    check_partition_key(source, partition)
    return f"{stage}/{source}/{partition}"


@dataclass(frozen=True)
class WarehouseLayout:
    """Where a writer builds the artifacts: ``raw/``, ``decoded/``, ``ted/``, ``catalog/``,
    ``standardized/``, ``lerobot/`` under ``root.folder`` (a local root's folder, or a bucket
    root's local copy; see :mod:`episode_warehouse.storage`). Readers name artifacts with
    :func:`artifact_name` and read them through the root, which writes nothing."""

    root: Root

    @classmethod
    def local(cls, folder: str | os.PathLike) -> WarehouseLayout:
        """The layout of a local folder (``WarehouseLayout.from_root`` checks the setting)."""
        return cls(LocalRoot(Path(folder)))

    @classmethod
    def from_root(
        cls, root: str | os.PathLike | None = None, *, local_copy: str | os.PathLike | None = None
    ) -> WarehouseLayout:
        """The writer's layout of ``root``, else ``$EPISODE_WAREHOUSE_ROOT``, else
        ``./warehouse-data``: a local folder or ``gs://BUCKET/PREFIX`` (built in its local copy
        under ``local_copy``, else ``$EPISODE_WAREHOUSE_LOCAL_COPY``; see
        :mod:`episode_warehouse.settings`)."""
        return cls.from_settings(Settings.from_env(root=root, local_copy=local_copy))

    @classmethod
    def from_settings(cls, settings: Settings) -> WarehouseLayout:
        """The writer's layout of ``settings.root`` (:func:`~episode_warehouse.storage.
        parse_root`)."""
        return cls(parse_root(None, settings, writer=True))

    @property
    def folder(self) -> Path:
        """Where the artifacts' files are built on this machine."""
        return self.root.folder

    def _part(self, stage: str, source: str, partition: str) -> Path:
        return self.root.folder / artifact_name(stage, source, partition)

    def raw_dir(self, source: str, partition: str) -> Path:
        return self._part("raw", source, partition)

    def decoded_dir(self, source: str, partition: str) -> Path:
        return self._part("decoded", source, partition)

    def ted_dir(self, source: str, partition: str) -> Path:
        return self._part("ted", source, partition)

    def standardized_dir(self, source: str, partition: str) -> Path:
        return self._part("standardized", source, partition)

    def lerobot_dir(self, name: str) -> Path:
        return self.root.folder / "lerobot" / name

    @property
    def catalog_dir(self) -> Path:
        return self.root.folder / "catalog"

    @property
    def url(self) -> str:
        """The root as the user gave it: the bucket URL, or the local folder."""
        return self.root.url
