"""An artifact of a bucket fetched whole for a reader: downloaded once into the local cache.

The cache (``EPISODE_WAREHOUSE_CACHE``) keeps one folder per published version of an artifact
(``<cache>/<bucket>/<prefix>/ted/<source>/<partition>/<token>``), so a rebuilt
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
from typing import Protocol

from episode_warehouse.atomic import write_lock
from episode_warehouse.guards.names import no_links_below
from episode_warehouse.records import RECORD
from episode_warehouse.settings import CACHE_ENV
from episode_warehouse.storage.bucket.objects import Bucket

log = logging.getLogger(__name__)


class Fetched(Protocol):
    """What the cache asks of a bucket artifact (``RemoteArtifact``, which calls
    :func:`cached_version` from its ``fetch``: the cache imports nothing of it, so the two
    modules import each other in no circle)."""

    root: Bucket
    rel: str

    @property
    def url(self) -> str: ...

    def changed_files(self, record: dict, folder: Path) -> list[str]: ...

    def corrupt_files(self, record: dict, folder: Path) -> list[str]: ...

    def download(self, record: dict, folder: Path) -> None: ...


_HASHED: set[Path] = set()  # versions whose every byte this process checked against the record


def cached_version(artifact: Fetched, record: dict, token: str) -> Path:
    """The cache folder of ``record``'s version (its token ``token``) of ``artifact``,
    downloaded and checked first if it is not complete there.

    Raises:
        SourceMissingError: an object of that version is gone (it was replaced and retired, or
            lost).
    """
    root = artifact.root
    folder = root.cache() / artifact.rel / token
    no_links_below(root.cache_base, folder, setting=CACHE_ENV)  # before anything is written
    if (
        (folder / RECORD).is_file()
        and folder in _HASHED
        and not artifact.changed_files(record, folder)
    ):
        return folder
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
    _HASHED.add(folder)
    _remove_older(folder)
    return folder


def _remove_older(folder: Path) -> None:
    """Delete the partition's other complete versions (one being downloaded by another
    process has no meta.json yet and is left to it)."""
    for other in folder.parent.iterdir():
        if other.is_symlink():
            continue  # never deleted through (the cache's own folders are never links)
        if other != folder and not other.name.startswith(".") and (other / RECORD).is_file():
            shutil.rmtree(other, ignore_errors=True)
