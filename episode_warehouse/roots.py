"""The warehouse root as a type: where artifacts are built and where their records count.

Two kinds, behind one interface (:class:`Root`), chosen once from the setting by
:meth:`WarehouseLayout.from_root <episode_warehouse.paths.WarehouseLayout.from_root>` and
passed explicitly to the incremental rule, the catalog and the readers:

- :class:`LocalRoot`: a folder; an artifact's record is its folder's ``meta.json``.
- :class:`~episode_warehouse.bucket.root.BucketCopy`: ``gs://bucket/prefix`` built in a local
  copy; an artifact's record is the bucket's (:mod:`episode_warehouse.bucket`).

An S3 or Azure root would be one more class with the same four members.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from episode_warehouse.bucket.artifact import RemoteArtifact
    from episode_warehouse.bucket.root import BucketRoot


class Root(Protocol):
    """Where a warehouse's artifacts live."""

    @property
    def url(self) -> str:
        """The root as the user gave it: the folder, or ``gs://bucket/prefix``."""
        ...

    @property
    def folder(self) -> Path:
        """The local folder the stages build in (a bucket root's local copy)."""
        ...

    @property
    def bucket(self) -> BucketRoot | None:
        """The objects of a bucket root (readers stream from them); None for a folder."""
        ...

    def remote(self, target: Path, record: str) -> RemoteArtifact | None:
        """The bucket artifact ``target`` is the local copy of (its record counts), or None
        when ``target``'s own record counts."""
        ...


@dataclass(frozen=True)
class LocalRoot:
    """A warehouse root that is a local folder: every artifact's record is in its folder."""

    folder: Path

    @property
    def url(self) -> str:
        return str(self.folder)

    @property
    def bucket(self) -> None:
        return None

    def remote(self, target: Path, record: str) -> None:
        return None
