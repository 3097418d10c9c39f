"""The OpenX source's datasets as listed now (WebDataset tars or RLDS versions), for its
sensor."""

from __future__ import annotations

from episode_warehouse.blobstore import open_blob_store
from episode_warehouse.gcs import url_scheme
from episode_warehouse.hub.client import HubClient
from episode_warehouse.sources.fingerprints import partition_fingerprints
from episode_warehouse.sources.openx.datasets import check_dataset_id
from episode_warehouse.sources.openx.rlds.listing import DATASET_INFO
from episode_warehouse.sources.openx.shards import HF_URL_RE


def openx_fingerprints(url: str, endpoint: str | None = None) -> dict[str, str]:
    """``{"cmu_stretch": fingerprint}`` for every dataset folder holding tar shards
    (``<dataset>/*.tar``, WebDataset) or RLDS version folders (``<dataset>/<version>/*``).

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
    return partition_fingerprints(
        {k: v for k, v in groups.items() if k in datasets}, check_dataset_id, "OpenX source"
    )
