"""What the sources hold now: a fingerprint per partition, for sensors to compare with the last.

A fingerprint changes when a file of the partition is added, removed or rewritten (GCS
generation/crc32c; size and mtime for a local mirror; LFS hash on the hub), and only then. Only
listings are read, never file contents: a tick over a mirror of any size takes seconds.
"""

from __future__ import annotations

import logging

from episode_warehouse.blobstore import BlobStore
from episode_warehouse.errors import PartitionKeyError
from episode_warehouse.incremental import fingerprint
from episode_warehouse.sources.atari.games import parse_partition_key
from episode_warehouse.sources.atari.rlu_files import parse_file_name as parse_rlu_name
from episode_warehouse.sources.openx.datasets import check_dataset_id

log = logging.getLogger(__name__)


def _fingerprints(groups: dict[str, list], validate, where: str) -> dict[str, str]:
    """Digest each group whose key is a valid partition key; warn about the others."""
    out = {}
    for key, files in groups.items():
        try:
            validate(key)
        except PartitionKeyError:
            log.warning("ignoring %r in the %s: not a valid partition key", key, where)
            continue
        out[key] = fingerprint(sorted(files))
    return out


def atari_fingerprints(store: BlobStore) -> dict[str, str]:
    """``{"Pong/5": fingerprint}`` for every valid game/run with files, in either layout
    (``Pong/5/replay_logs/...`` or ``Pong/run_5-NNNNN-of-MMMMM``)."""
    groups: dict[str, list] = {}
    for blob in store.list(""):
        parts = blob.name.split("/")
        if len(parts) == 4 and parts[2] == "replay_logs":  # Dopamine
            key = f"{parts[0]}/{parts[1]}"
        elif len(parts) == 2 and (parsed := parse_rlu_name(parts[1])) is not None:  # RLU
            key = f"{parts[0]}/{parsed[0]}"
        else:
            continue
        groups.setdefault(key, []).append([parts[-1], blob.generation, blob.crc32c, blob.size])
    return _fingerprints(groups, parse_partition_key, "Atari source")


def openx_fingerprints(url: str, endpoint: str | None = None) -> dict[str, str]:
    """``{"cmu_stretch": fingerprint}`` for every dataset folder holding tar shards
    (``<dataset>/*.tar``, WebDataset) or RLDS version folders (``<dataset>/<version>/*``).

    ``endpoint`` points a ``gs://`` URL at an emulator."""
    groups: dict[str, list] = {}
    if url.startswith("hf://"):
        from episode_warehouse.hub.client import HubClient
        from episode_warehouse.sources.openx.shards import _HF_RE

        match = _HF_RE.match(url)
        if not match:
            return {}
        client = HubClient()
        sha = client.resolve(match.group(1), match.group(2))
        for f in client.files(match.group(1), sha).values():
            if f.path.endswith(".tar") and "/" in f.path:
                groups.setdefault(f.path.split("/")[0], []).append([f.path, f.size, f.content_id])
        return _fingerprints(groups, check_dataset_id, "OpenX source")
    from episode_warehouse.blobstore import open_blob_store
    from episode_warehouse.sources.openx.rlds.listing import DATASET_INFO

    store = open_blob_store(url, endpoint=endpoint)
    datasets = set()
    for blob in store.list(""):
        parts = blob.name.split("/")
        tar = len(parts) == 2 and parts[1].endswith(".tar")
        if not tar and len(parts) != 3:  # <dataset>/<file>.tar or <dataset>/<version>/<file>
            continue
        if tar or parts[2] == DATASET_INFO:
            datasets.add(parts[0])
        groups.setdefault(parts[0], []).append([blob.name, blob.size, blob.generation, blob.crc32c])
    return _fingerprints(
        {k: v for k, v in groups.items() if k in datasets}, check_dataset_id, "OpenX source"
    )


def lerobot_fingerprints(store: BlobStore, repos: list[str] | None = None) -> dict[str, str]:
    """``{"owner/name": fingerprint}`` for every ``<owner>/<name>/`` holding ``meta/info.json``
    (its meta/, data/ and videos/ files count). On the hub, which cannot be listed whole: the
    ``repos`` named, each fingerprinted by the commit its LeRobot revision resolves to."""
    from episode_warehouse.hub.store import HubBlobStore
    from episode_warehouse.sources.lerobot.hub_revision import lerobot_revision
    from episode_warehouse.sources.lerobot.mirror import FOLDERS, check_repo_id

    if isinstance(store, HubBlobStore):
        found = {}
        for repo in repos or []:
            store.pin(repo, lerobot_revision(store.client, repo))
            found[repo] = [store.commit(repo)]
        return _fingerprints(found, check_repo_id, "LeRobot source")

    groups: dict[str, list] = {}
    datasets = set()
    for blob in store.list(""):
        parts = blob.name.split("/", 2)
        if len(parts) < 3 or not parts[2].startswith(FOLDERS):
            continue
        key = f"{parts[0]}/{parts[1]}"
        datasets.update([key] if parts[2] == "meta/info.json" else [])
        groups.setdefault(key, []).append([parts[2], blob.generation, blob.crc32c, blob.size])
    found = {k: v for k, v in groups.items() if k in datasets}
    return _fingerprints(found, check_repo_id, "LeRobot source")


def changed(previous: dict[str, str], current: dict[str, str]) -> list[str]:
    """Keys that are new or whose fingerprint differs (removed keys are not reported)."""
    return sorted(k for k, fp in current.items() if previous.get(k) != fp)
