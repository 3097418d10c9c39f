"""A TED opened from a bucket root: downloaded once into the local cache, then memory-mapped.

The cache (``EPISODE_WAREHOUSE_CACHE``) keeps one folder per published version of a
partition's TED (``<cache>/<bucket>/<prefix>/ted/<source>/<partition>/<token>``), so a rebuilt
partition is fetched again into a new folder and never mixed with the old one. Downloads run
in parallel, resume ``.part`` files, verify size and crc32c, and write ``meta.json`` last: a
folder with a ``meta.json`` is complete. The first open of a version in a process reads every
file and compares its crc32c with the record (~0.3 s a GB); later opens in that process compare
each file's size and mtime with those it had when verified (a stat each). A file that differs
from the record (flipped bytes, even with the mtime put back; truncated) is downloaded again
before the TED is opened. Not detected: a file changed while a process already has it open
(memory-mapped files are shared with the disk).
Older versions of the partition are removed after a new one is complete (processes that
memory-mapped them keep reading them).
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from episode_warehouse.atomic import write_lock
from episode_warehouse.bucket.artifact import PUBLISHED, RemoteArtifact
from episode_warehouse.bucket.root import BucketRoot
from episode_warehouse.errors import NotMaterializedError, SourceMissingError
from episode_warehouse.guards.names import no_links_below
from episode_warehouse.records import RECORD
from episode_warehouse.settings import CACHE_ENV

log = logging.getLogger(__name__)
_HASHED: set[Path] = set()  # versions whose every byte this process checked against the record


def ted_record(root: BucketRoot, source: str, partition: str) -> tuple[RemoteArtifact, dict]:
    """The TED artifact of a partition and its published record.

    Raises:
        NotMaterializedError: the bucket has no TED for this partition.
    """
    artifact = RemoteArtifact(root, f"ted/{source}/{partition}")
    record, _ = artifact.read()
    if not record.get(PUBLISHED):
        raise NotMaterializedError(
            "no TED in the bucket for this partition",
            subject=artifact.url,
            fix=f"materialize it: warehouse materialize {source} {partition} --through ted",
        )
    return artifact, record


def cached_ted(root: BucketRoot, source: str, partition: str) -> Path:
    """The local folder of the partition's current TED, downloaded if it is not cached yet."""
    for attempt in range(3):
        artifact, record = ted_record(root, source, partition)
        folder = root.cache() / artifact.rel / record[PUBLISHED]["token"]
        no_links_below(root.cache_base, folder, setting=CACHE_ENV)  # before anything is written
        if (
            (folder / RECORD).is_file()
            and folder in _HASHED
            and not artifact.changed_files(record, folder)
        ):
            return folder
        try:
            with write_lock(folder):
                changed = artifact.changed_files(record, folder)
                if not changed and (folder / RECORD).is_file() and folder not in _HASHED:
                    changed = artifact.corrupt_files(record, folder)
                    for file in changed:  # its stamp says verified: the bytes say otherwise
                        (folder / file).unlink(missing_ok=True)
                if not (folder / RECORD).is_file() or changed:
                    if (folder / RECORD).is_file():
                        log.warning(
                            "re-verifying %s in %s: %s changed",
                            artifact.url,
                            folder,
                            ", ".join(changed),
                        )
                        (folder / RECORD).unlink()  # incomplete until every file checks out
                    log.info("downloading %s into %s", artifact.url, folder)
                    artifact.download(record, folder)
        except SourceMissingError:
            # an object of this version is gone: fetch the current version if the partition
            # was republished (and this one expired); if not, the error is terminal
            current, _ = artifact.read()
            token = current.get(PUBLISHED, {}).get("token")
            if attempt == 2 or token == record[PUBLISHED]["token"]:
                raise
            log.info(
                "%s was republished during the download; fetching the new version", artifact.url
            )
            continue
        _HASHED.add(folder)
        _remove_older(folder)
        return folder
    raise AssertionError("unreachable")  # pragma: no cover


def _remove_older(folder: Path) -> None:
    """Delete the partition's other complete versions (one being downloaded by another
    process has no meta.json yet and is left to it)."""
    for other in folder.parent.iterdir():
        if other.is_symlink():
            continue  # never deleted through (the cache's own folders are never links)
        if other != folder and not other.name.startswith(".") and (other / RECORD).is_file():
            shutil.rmtree(other, ignore_errors=True)
