"""The raw stage of one LeRobot dataset: its ``meta/``, ``data/`` and ``videos/`` files mirrored
from ``LEROBOT_URL``: the hub (``hf://datasets``, a partition is a repo id), or a local folder or
``gs://bucket/prefix`` holding ``<owner>/<name>/``.

On the hub the revision is chosen as ``LeRobotDataset`` chooses it (``hub_revision``) and
resolved to a commit sha once; the sha is in the record (``revision``) and in ``source_url``.
Metadata comes first: ``meta/info.json`` is read and its codebase version checked before any
data file is fetched, so a dataset of a version no reader reads (v2.0 and older) is refused
without downloading it.

The raw folder (``<root>/raw/lerobot/<owner>/<name>/``) is itself a LeRobot dataset folder plus
the incremental rule's record: its inputs are the listing (names, sizes, GCS generation and
crc32c, or a local file's size and mtime). Files that did not change are hard-linked from the
published version, the others copied and checksummed on the way (``sources.mirror.mirror_files``).
"""

from __future__ import annotations

from episode_warehouse.blobstore import BlobInfo, BlobStore
from episode_warehouse.errors import CorruptInputError, SourceMissingError
from episode_warehouse.guards.json_input import load_json
from episode_warehouse.incremental import Built
from episode_warehouse.records import RawRecord
from episode_warehouse.sources.lerobot.hub_revision import lerobot_revision
from episode_warehouse.sources.lerobot.layout import LAYOUTS, unreadable
from episode_warehouse.sources.lerobot.repo_id import check_repo_id
from episode_warehouse.sources.mirror import MirrorReport, mirror_listed
from episode_warehouse.storage import Root

FOLDERS = ("meta/", "data/", "videos/")
_INFO_MAX = 16 << 20


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


def check_info(store: BlobStore, repo_id: str, blob: BlobInfo) -> None:
    """Refuse a dataset of another codebase version from its ``meta/info.json`` alone.

    Raises:
        FormatVersionError: not a v3.0 or v2.1 dataset (names lerobot's converter).
        CorruptInputError: the file is not a JSON object of at most 16 MB.
    """
    subject = f"{store.location(repo_id)}/meta/info.json"
    if blob.size > _INFO_MAX:
        raise CorruptInputError(f"{blob.size} bytes, not a dataset's info", subject=subject)
    with store.open(blob) as fh:
        data = fh.read(_INFO_MAX + 1)
    info = load_json(data, subject=subject, fix="download the dataset again", max_bytes=_INFO_MAX)
    version = info.get("codebase_version") if isinstance(info, dict) else None
    if version not in LAYOUTS:
        raise unreadable(version, subject, repo_id)


def mirror_dataset(
    store: BlobStore, repo_id: str, target, *, root: Root, code_version: str, workers: int = 4
) -> tuple[Built[RawRecord], MirrorReport]:
    """Bring the raw folder ``target`` in line with the dataset's files in ``store``."""
    check_repo_id(repo_id)
    revision = store.revision(repo_id, lerobot_revision)  # the hub's: pinned before listing
    wanted = list_dataset(store, repo_id)
    check_info(store, repo_id, wanted["meta/info.json"])
    # the card's license, carried to what is published from this dataset (docs/hub.md)
    license = store.card_license(repo_id, revision)
    return mirror_listed(
        store, repo_id, wanted, target, root=root, code_version=code_version,
        record_format="lerobot-raw", workers=workers, revision=revision, license=license,
    )  # fmt: skip
