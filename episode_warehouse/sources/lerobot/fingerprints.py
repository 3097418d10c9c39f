"""The LeRobot source's datasets as listed now (a folder or bucket, or named hub repos), for
its sensor."""

from __future__ import annotations

from episode_warehouse.blobstore import BlobStore
from episode_warehouse.sources.fingerprints import partition_fingerprints
from episode_warehouse.sources.lerobot.hub_revision import lerobot_revision
from episode_warehouse.sources.lerobot.mirror import FOLDERS, check_repo_id


def lerobot_fingerprints(store: BlobStore, repos: list[str] | None = None) -> dict[str, str]:
    """``{"owner/name": fingerprint}`` for every ``<owner>/<name>/`` holding ``meta/info.json``
    (its meta/, data/ and videos/ files count). On the hub, which cannot be listed whole: the
    ``repos`` named, each fingerprinted by the commit its LeRobot revision resolves to."""
    found: dict[str, list] = {}
    for repo in repos or []:  # a versioned store (the hub): its commit is the fingerprint
        revision = store.revision(repo, lerobot_revision)
        if revision is not None:
            found[repo] = [revision]
    groups: dict[str, list] = {}
    datasets = set()
    for blob in store.list(""):
        parts = blob.name.split("/", 2)
        if len(parts) < 3 or not parts[2].startswith(FOLDERS):
            continue
        key = f"{parts[0]}/{parts[1]}"
        datasets.update([key] if parts[2] == "meta/info.json" else [])
        groups.setdefault(key, []).append([parts[2], blob.generation, blob.crc32c, blob.size])
    found.update((k, v) for k, v in groups.items() if k in datasets)
    return partition_fingerprints(found, check_repo_id, "LeRobot source")
