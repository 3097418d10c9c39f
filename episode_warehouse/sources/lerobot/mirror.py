"""The raw stage of one LeRobot dataset: its ``meta/``, ``data/`` and ``videos/`` files mirrored
from ``LEROBOT_URL`` (a local folder or ``gs://bucket/prefix`` holding ``<owner>/<name>/``).

The raw folder (``<root>/raw/lerobot/<owner>/<name>/``) is itself a LeRobot dataset folder plus
the incremental rule's record: its inputs are the listing (names, sizes, GCS generation and
crc32c, or a local file's size and mtime). Files that did not change are hard-linked from the
published version, the others copied and checksummed on the way (``sources.mirror.mirror_files``).
"""

from __future__ import annotations

from episode_warehouse.blobstore import BlobInfo, BlobStore
from episode_warehouse.errors import SourceMissingError
from episode_warehouse.incremental import Built, build_if_changed
from episode_warehouse.sources.lerobot.repo_id import check_repo_id
from episode_warehouse.sources.mirror import MirrorReport, mirror_files

FOLDERS = ("meta/", "data/", "videos/")


def list_dataset(store: BlobStore, repo_id: str) -> dict[str, BlobInfo]:
    """The dataset's files by path inside it (``meta/info.json``, ``data/chunk-000/...``).

    Raises:
        SourceMissingError: no ``meta/info.json`` for ``repo_id`` in the store.
    """
    prefix = f"{repo_id}/"
    files = {
        blob.name.removeprefix(prefix): blob
        for blob in store.list(prefix)
        if blob.name.removeprefix(prefix).startswith(FOLDERS)
    }
    if "meta/info.json" not in files:
        raise SourceMissingError(
            "no LeRobot dataset there (no meta/info.json)",
            subject=f"{store.url}/{repo_id}",
            fix="check LEROBOT_URL and the repo id (the store must hold <owner>/<name>/meta/)",
        )
    return dict(sorted(files.items()))


def mirror_dataset(
    store: BlobStore, repo_id: str, target, *, code_version: str, workers: int = 4
) -> tuple[Built, MirrorReport]:
    """Bring the raw folder ``target`` in line with the dataset's files in ``store``."""
    wanted = list_dataset(store, check_repo_id(repo_id))
    source_url = f"{store.url}/{repo_id}"
    inputs = {
        "source_url": source_url,
        "files": {name: blob.to_json() for name, blob in wanted.items()},
        "code_version": code_version,
        "format": "lerobot-raw/v1",  # the record's format: a new one rebuilds the folder
    }
    report = MirrorReport()

    def build(staging) -> dict:
        files = mirror_files(store, wanted, target, staging, report, subdir=".", workers=workers)
        return {"format": "lerobot-raw", "source_url": source_url, "files": files}

    return build_if_changed(target, inputs, build), report
