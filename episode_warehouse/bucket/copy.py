"""A ``gs://`` warehouse root as the stages see it: its objects and the local copy they build in.

:meth:`BucketCopy.open` binds the local copy to its bucket (``.bucket-root.json``, so that one
folder never serves two roots); every artifact under the copy is then the local copy of the
bucket artifact of the same relative name, whose record is the one that counts.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from episode_warehouse.bucket.artifact import RemoteArtifact
from episode_warehouse.bucket.root import BucketRoot, bind
from episode_warehouse.errors import ConfigError
from episode_warehouse.guards.names import no_links_below
from episode_warehouse.settings import LOCAL_COPY_ENV, Settings


@dataclass(frozen=True)
class BucketCopy:
    """``bucket``'s artifacts, built and checked out under ``folder`` (a :class:`Root`)."""

    bucket: BucketRoot
    folder: Path

    @classmethod
    def open(cls, url: str, settings: Settings) -> BucketCopy:
        """The root ``gs://BUCKET[/PREFIX]`` with its local copy under ``settings.local_copy``
        (see :meth:`BucketRoot.local_copy`).

        Raises:
            ConfigError: not a bucket URL, or the folder is the copy of another root.
        """
        bucket = BucketRoot.parse(url, settings)
        folder = no_links_below(
            settings.local_copy, bucket.local_copy(settings.local_copy), setting=LOCAL_COPY_ENV
        )
        bind(folder, bucket)
        return cls(bucket, folder)

    @property
    def url(self) -> str:
        return self.bucket.url

    def remote(self, target: Path, record: str) -> RemoteArtifact:
        """Raises ConfigError for a ``target`` outside the local copy: an artifact of a bucket
        root is built in its copy, nowhere else."""
        target = Path(target).absolute()
        if not target.is_relative_to(self.folder):
            raise ConfigError(
                f"an artifact of {self.url} must be built in its local copy {self.folder}",
                subject=str(target),
                fix="use the paths of this root's WarehouseLayout",
            )
        return RemoteArtifact(self.bucket, target.relative_to(self.folder).as_posix(), record)
