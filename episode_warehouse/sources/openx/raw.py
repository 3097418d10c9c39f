"""The raw stage of one OpenX dataset, in either layout (``OPENX_FORMAT``):

- ``rlds``: Open X-Embodiment as published, TFDS folders ``<dataset>/<version>/`` in
  ``gs://gresearch/robotics`` (the default ``OPENX_URL``) or a folder like it (``rlds/``);
- ``webdataset``: the hub repack, ``<dataset>/*.tar`` of pickled episodes, on the hub
  (``hf://datasets/OWNER/REPO``) or in a folder (``mirror.py``, ``shards.py``).

``auto`` tells them apart from the listing: a ``<dataset>/<version>/dataset_info.json`` is RLDS,
``<dataset>/*.tar`` is WebDataset; both for one dataset is an error naming the setting.
"""

from __future__ import annotations

from episode_warehouse.blobstore import open_blob_store
from episode_warehouse.errors import ConfigError, SourceMissingError
from episode_warehouse.gcs import url_scheme
from episode_warehouse.incremental import Built
from episode_warehouse.partition_keys import dataset_of, parse_range
from episode_warehouse.retry import RetryPolicy
from episode_warehouse.sources.openx.datasets import did_you_mean
from episode_warehouse.sources.openx.mirror import mirror_shards
from episode_warehouse.sources.openx.record import RldsRawRecord, ShardsRawRecord
from episode_warehouse.sources.openx.rlds.listing import list_rlds, list_versions
from episode_warehouse.sources.openx.rlds.mirror import mirror_rlds
from episode_warehouse.sources.openx.shards import list_shards
from episode_warehouse.storage import Root
from episode_warehouse.ted.dataset_parts import check_fits

LAYOUTS = ("auto", "rlds", "webdataset")


def detect_layout(
    url: str, dataset: str, layout: str = "auto", *, endpoint: str | None = None
) -> str:
    """``"rlds"`` or ``"webdataset"``: ``layout`` itself, or (``auto``) what the listing holds.

    Raises:
        ConfigError: an unknown layout, RLDS asked of the hub, or both layouts present.
        SourceMissingError: neither layout holds the dataset.
    """
    if layout not in LAYOUTS:
        raise ConfigError(
            f"unknown OpenX format {layout!r}",
            subject="OPENX_FORMAT",
            fix="use auto, rlds or webdataset",
        )
    hub = url_scheme(url) == "hf"
    if hub and layout == "rlds":
        raise ConfigError(
            "RLDS folders are read from gs:// or a local folder, not from the hub",
            subject="OPENX_URL",
            fix="set OPENX_URL=gs://gresearch/robotics, or OPENX_FORMAT=webdataset",
        )
    if layout != "auto" or hub:
        return "webdataset" if hub else layout
    store = open_blob_store(url, endpoint=endpoint)
    rlds = bool(list_versions(store, dataset))
    tars = any(
        b.name.count("/") == 1 and b.name.endswith(".tar") for b in store.list(f"{dataset}/")
    )
    if rlds and tars:
        raise ConfigError(
            f"both layouts hold {dataset}: RLDS version folders and WebDataset tars",
            subject=url,
            fix="set OPENX_FORMAT to rlds or webdataset",
        )
    if not rlds and not tars:
        raise SourceMissingError(
            f"no files of {dataset} in either layout",
            subject=url,
            fix=f"{did_you_mean(dataset)}check OPENX_URL and the dataset id: expected "
            f"{dataset}/<version>/dataset_info.json (RLDS) or {dataset}/*.tar (WebDataset)",
        )
    return "rlds" if rlds else "webdataset"


def mirror_openx(
    url: str,
    key: str,
    target,
    *,
    root: Root,
    code_version: str,
    mode: str = "download",
    layout: str = "auto",
    versions: dict[str, str] | None = None,
    endpoint: str | None = None,
    policy: RetryPolicy | None = None,
) -> Built[ShardsRawRecord] | Built[RldsRawRecord]:
    """Bring the raw folder ``target`` of one partition (a dataset, or a shard range of an
    RLDS dataset: only its shards) in line with the source, in its layout.

    Raises:
        ConfigError: a bad layout, mode, URL, or the WebDataset layout on ``gs://``.
        SourceMissingError: the dataset, or its pinned version, is not in the source.
        CorruptInputError: a version folder whose files disagree with its dataset_info.json.
        PartitionConflictError: another published part of the dataset holds some of its shards.
    """
    shard_range = parse_range(key)
    dataset = dataset_of(key)
    check_fits(root, "openx", key)  # before anything is listed or written
    chosen = detect_layout(url, dataset, layout, endpoint=endpoint)
    if chosen == "webdataset":
        if shard_range is not None:
            raise ConfigError(
                "shard ranges are partitions of RLDS datasets; the WebDataset repack's tars "
                "are listed from the hub, not from dataset_info.json",
                subject=key,
                fix=f"materialize {dataset} as one partition, or read it as RLDS",
            )
        listing = list_shards(url, dataset, policy)
        return mirror_shards(listing, target, url, root=root, mode=mode, code_version=code_version)
    store = open_blob_store(url, policy, endpoint=endpoint)
    rlds = list_rlds(store, dataset, (versions or {}).get(dataset)).only(shard_range)
    built, _ = mirror_rlds(store, rlds, target, root=root, mode=mode, code_version=code_version)
    return built
