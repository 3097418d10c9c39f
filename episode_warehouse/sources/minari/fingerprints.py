"""The Minari source's datasets as listed now, for its sensor: every ``<id>/data/metadata.json``
of a folder or bucket, or on the hub the ids ``MINARI_DATASETS`` names (an organization's repos
cannot be listed whole), each fingerprinted by its repo's commit."""

from __future__ import annotations

from episode_warehouse.blobstore import BlobStore
from episode_warehouse.sources.fingerprints import partition_fingerprints
from episode_warehouse.sources.minari.dataset_id import check_dataset_id
from episode_warehouse.sources.minari.mirror import DATA, METADATA_FILE, dataset_prefix


def minari_fingerprints(
    store: BlobStore, organization: str = "", datasets: list[str] | None = None
) -> dict[str, str]:
    """``{dataset id: fingerprint}`` of the datasets the store holds now."""
    found: dict[str, list] = {}
    for dataset_id in datasets or []:  # a versioned store (the hub): its repo's commit
        prefix = dataset_prefix(organization, dataset_id)
        revision = store.revision("/".join(prefix.split("/")[:2]))
        if revision is not None:
            found[dataset_id] = [revision]
    groups: dict[str, list] = {}
    ids = set()
    for blob in store.list(""):
        head, sep, rest = blob.name.partition(f"/{DATA}")
        if not sep:
            continue
        groups.setdefault(head, []).append([rest, blob.generation, blob.crc32c, blob.size])
        if f"{DATA}{rest}" == METADATA_FILE:
            ids.add(head)
    found.update((k, v) for k, v in groups.items() if k in ids)
    return partition_fingerprints(found, check_dataset_id, "Minari source")
