"""The OpenX source's datasets as listed now (WebDataset tars or RLDS versions), for its
sensor."""

from __future__ import annotations

import json

from episode_warehouse.blobstore import open_blob_store
from episode_warehouse.gcs import url_scheme
from episode_warehouse.hub.client import HubClient
from episode_warehouse.sources.fingerprints import partition_fingerprints
from episode_warehouse.sources.openx.datasets import check_dataset_id
from episode_warehouse.sources.openx.rlds.listing import DATASET_INFO
from episode_warehouse.sources.openx.shards import HF_URL_RE


def openx_fingerprints(
    url: str,
    endpoint: str | None = None,
    *,
    ranges: dict[str, int] | None = None,
    pins: dict[str, str] | None = None,
) -> dict[str, str]:
    """``{"cmu_stretch": fingerprint}`` for every dataset folder holding tar shards
    (``<dataset>/*.tar``, WebDataset) or RLDS version folders (``<dataset>/<version>/*``).

    A dataset ``ranges`` names (``{"droid": 32}``, ``OPENX_SHARD_RANGES``) is listed as its shard
    ranges instead (``droid@00000-00031`` ...), each fingerprinted by its own shards and the
    version's metadata files, so a changed shard requests only its range. Cutting it reads
    the version's ``dataset_info.json`` and ``features.json`` (the version ``pins`` names, else
    the newest): the only contents a tick reads, and only for those datasets.

    ``endpoint`` points a ``gs://`` URL at an emulator."""
    groups: dict[str, list] = {}
    if url_scheme(url) == "hf":
        match = HF_URL_RE.match(url)
        if not match:
            return {}
        client = HubClient()
        sha = client.resolve(match.group(1), match.group(2))
        for f in client.files(match.group(1), sha).values():
            if f.path.endswith(".tar") and "/" in f.path:
                groups.setdefault(f.path.split("/")[0], []).append([f.path, f.size, f.content_id])
        return partition_fingerprints(groups, check_dataset_id, "OpenX source")
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
    groups = {k: v for k, v in groups.items() if k in datasets}
    for dataset, per_range in (ranges or {}).items():
        if dataset in groups:
            del groups[dataset]
            groups.update(_range_groups(store, dataset, per_range, (pins or {}).get(dataset)))
    return partition_fingerprints(groups, check_dataset_id, "OpenX source")


def _range_groups(store, dataset: str, per_range: int, pinned: str | None) -> dict[str, list]:
    """The listing entries of each shard range of ``dataset``'s version, by range key."""
    from episode_warehouse.sources.openx.rlds.listing import list_rlds
    from episode_warehouse.sources.openx.shard_ranges import plan_ranges

    listing = list_rlds(store, dataset, pinned)
    names = list(listing.shards)
    common = [
        ["version", listing.version],
        [
            "dataset_info.json",
            json.dumps(listing.dataset_info_doc, sort_keys=True, allow_nan=False),
        ],
        ["features.json", json.dumps(listing.features_doc, sort_keys=True, allow_nan=False)],
    ]
    out = {}
    for shard_range in plan_ranges(dataset, len(names), per_range):
        blobs = [listing.shards[n] for n in names[shard_range.first : shard_range.last + 1]]
        out[shard_range.key] = [
            *common, *([b.name, b.size, b.generation, b.crc32c] for b in blobs)
        ]  # fmt: skip
    return out
