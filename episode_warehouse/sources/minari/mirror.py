"""The raw stage of one Minari dataset: its ``data/`` files mirrored from ``MINARI_URL``.

``MINARI_URL`` is Minari's default remote on the hub, ``hf://datasets/farama-minari`` (an
organization with a dataset repo per first id component: ``farama-minari/D4RL`` holds
``door/human-v2/data/...``, as ``minari/storage/remotes/huggingface.py`` lays them out), or a
local folder or ``gs://bucket/prefix`` in ``MINARI_DATASETS_PATH`` layout
(``<namespace>/<env>/<name>-vN/data/``). On the hub the repo's ``main`` is resolved to a commit
once; the sha is in the record (``revision``) and in ``source_url``.

The raw folder (``<root>/raw/minari/<dataset id>/``) is the dataset's folder (``data/``) plus the
incremental rule's record.
"""

from __future__ import annotations

from pathlib import Path

from episode_warehouse.blobstore import BlobInfo, BlobStore
from episode_warehouse.errors import SourceMissingError
from episode_warehouse.incremental import Built
from episode_warehouse.records import RawRecord
from episode_warehouse.sources.minari.dataset_id import check_dataset_id
from episode_warehouse.sources.mirror import MirrorReport, mirror_listed
from episode_warehouse.storage import Root

DATA = "data/"
METADATA_FILE = "data/metadata.json"


def dataset_prefix(organization: str, dataset_id: str) -> str:
    """Where the dataset is in its store: ``<organization>/<id>`` on the hub, ``<id>`` else."""
    check_dataset_id(dataset_id)
    return f"{organization}/{dataset_id}" if organization else dataset_id


def list_dataset(store: BlobStore, prefix: str) -> dict[str, BlobInfo]:
    """The dataset's files by path inside it (``data/metadata.json``, ``data/main_data.hdf5``,
    ``data/0/part-0.arrow`` ...).

    Raises:
        SourceMissingError: no ``data/metadata.json`` there.
    """
    start = f"{prefix}/"
    files = {
        blob.name.removeprefix(start): blob
        for blob in store.list(start)
        if blob.name.removeprefix(start).startswith(DATA)
    }
    if METADATA_FILE not in files:
        raise SourceMissingError(
            "no Minari dataset there (no data/metadata.json)",
            subject=f"{store.url}/{prefix}",
            fix="check MINARI_URL and the dataset id (namespace/env/name-vN; the store holds "
            "<id>/data/, or on the hub <organization>/<namespace> repos)",
        )
    return dict(sorted(files.items()))


def mirror_dataset(
    store: BlobStore,
    organization: str,
    dataset_id: str,
    target: Path,
    *,
    root: Root,
    code_version: str,
    workers: int = 4,
) -> tuple[Built[RawRecord], MirrorReport]:
    """Bring the raw folder ``target`` in line with the dataset's files in ``store``."""
    prefix = dataset_prefix(organization, dataset_id)
    wanted = list_dataset(store, prefix)
    revision = store.revision("/".join(prefix.split("/")[:2]))  # the hub's commit of its repo
    return mirror_listed(
        store,
        prefix,
        wanted,
        target,
        root=root,
        code_version=code_version,
        record_format="minari-raw",
        workers=workers,
        revision=revision,
    )
