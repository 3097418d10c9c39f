"""Find one RLDS dataset in a store (``gs://gresearch/robotics`` or a folder like it): its version
folders, the version to read (the newest, or the one pinned by ``OPENX_VERSIONS``), and that
folder's files checked against its ``dataset_info.json``.

A folder is ``<dataset>/<version>/`` with ``dataset_info.json``, ``features.json`` and the
shards. A shard the info names that is not in the listing, and a TFRecord file the info does not
name, are errors (real mirrors have both: a cut upload, a leftover of another version). Other
files (TFDS writes e.g. ``image.image.json`` label lists beside the shards) are not read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from episode_warehouse.blobstore import BlobInfo, BlobStore
from episode_warehouse.errors import (
    ConfigError,
    CorruptInputError,
    PartitionKeyError,
    SourceMissingError,
)
from episode_warehouse.guards.json_input import load_json
from episode_warehouse.partition_keys import ShardRange
from episode_warehouse.sources.openx.rlds.dataset_info import DatasetInfo, parse_dataset_info
from episode_warehouse.sources.openx.rlds.features import RldsFeatures, parse_features

DATASET_INFO = "dataset_info.json"
FEATURES = "features.json"
MAX_JSON_BYTES = 16 << 20
_VERSION_RE = re.compile(r"^\d+\.\d+\.\d+$")
_PINS_RE = re.compile(r"^[a-z0-9_]+=\d+\.\d+\.\d+$")


def parse_version_pins(text: str | None) -> dict[str, str]:
    """``bridge=0.1.0,fractal20220817_data=0.1.0`` as a dict (empty: read the newest).

    Raises:
        ConfigError: an entry that is not ``dataset=MAJOR.MINOR.PATCH``.
    """
    pins: dict[str, str] = {}
    for part in (text or "").split(","):
        part = part.strip()
        if not part:
            continue
        if not _PINS_RE.match(part):
            raise ConfigError(
                f"version pin {part!r} is not dataset=MAJOR.MINOR.PATCH",
                subject="OPENX_VERSIONS",
                fix="write e.g. OPENX_VERSIONS=bridge=0.1.0,cmu_stretch=0.1.0",
            )
        name, version = part.split("=")
        pins[name] = version
    return pins


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def list_versions(store: BlobStore, dataset: str) -> dict[str, list[BlobInfo]]:
    """Every ``<dataset>/<version>/`` folder holding a dataset_info.json, with its files."""
    folders: dict[str, list[BlobInfo]] = {}
    for blob in store.list(f"{dataset}/"):
        parts = blob.name.split("/")
        if len(parts) == 3 and parts[0] == dataset and _VERSION_RE.match(parts[1]):
            folders.setdefault(parts[1], []).append(blob)
    return {v: b for v, b in folders.items() if any(x.name.endswith(f"/{DATASET_INFO}") for x in b)}


@dataclass(frozen=True)
class RldsListing:
    """One version folder of one dataset, checked: its info, features and shard blobs."""

    dataset: str
    version: str
    info: DatasetInfo
    features_doc: dict
    dataset_info_doc: dict
    shards: dict[str, BlobInfo]  # by file name, in dataset_info.json's order

    @property
    def features(self) -> RldsFeatures:
        return parse_features(self.features_doc, f"{self.dataset}/{self.version}/{FEATURES}")

    def only(self, shard_range: ShardRange | None) -> RldsListing:
        """This listing with only the shards of ``shard_range`` (indices in the info's order),
        or itself for None.

        Raises:
            PartitionKeyError: the range reaches past the last shard (naming how many there are).
        """
        if shard_range is None:
            return self
        names = list(self.shards)
        if shard_range.last >= len(names):
            raise PartitionKeyError(
                f"{self.dataset} {self.version} has {len(names)} shards (0 to "
                f"{len(names) - 1}); the range ends at {shard_range.last}",
                subject=shard_range.key,
                fix=f"end the range at shard {len(names) - 1:05d} or before",
            )
        kept = {n: self.shards[n] for n in names[shard_range.first : shard_range.last + 1]}
        return replace(self, shards=kept)


def _read_json(store: BlobStore, blob: BlobInfo) -> dict:
    subject = f"{store.url}/{blob.name}"
    if blob.size > MAX_JSON_BYTES:
        raise CorruptInputError(
            f"{blob.size} bytes, over the {MAX_JSON_BYTES} a metadata file may have",
            subject=subject,
        )
    with store.open(blob) as fh:
        data = fh.read(MAX_JSON_BYTES + 1)
    doc = load_json(data, subject=subject, fix="mirror the dataset again", max_bytes=MAX_JSON_BYTES)
    if not isinstance(doc, dict):
        raise CorruptInputError("not a JSON object", subject=subject)
    return doc


def list_rlds(store: BlobStore, dataset: str, pinned: str | None = None) -> RldsListing:
    """The version folder of ``dataset`` to read: ``pinned``, else the newest.

    Raises:
        SourceMissingError: no version folder, or the pinned version is not there.
        CorruptInputError: no features.json, a malformed info or features file, a shard the
            info names that is missing, or a shard file the info does not name.
    """
    versions = list_versions(store, dataset)
    if not versions:
        raise SourceMissingError(
            f"no RLDS version folder of {dataset!r} ({dataset}/<version>/{DATASET_INFO})",
            subject=store.url,
            fix="check OPENX_URL and the dataset id (e.g. cmu_stretch, bridge)",
        )
    if pinned is not None and pinned not in versions:
        raise SourceMissingError(
            f"version {pinned} of {dataset} is not there (found: {', '.join(sorted(versions))})",
            subject=store.url,
            fix="change the pin in OPENX_VERSIONS, or remove it to read the newest",
        )
    version = pinned or max(versions, key=_version_key)
    folder = f"{dataset}/{version}"
    blobs = {b.name.rsplit("/", 1)[-1]: b for b in versions[version]}
    if FEATURES not in blobs:
        raise CorruptInputError(
            f"{folder}/ has no {FEATURES}; the reader is driven by it",
            subject=store.url,
            fix="copy the folder with its features.json (TFDS writes one beside the shards)",
        )
    info_doc = _read_json(store, blobs[DATASET_INFO])
    info = parse_dataset_info(info_doc, f"{store.url}/{folder}/{DATASET_INFO}", dataset=dataset)
    features_doc = _read_json(store, blobs[FEATURES])
    parse_features(features_doc, f"{store.url}/{folder}/{FEATURES}")  # refused early, by name
    named = [s.name for s in info.shards]
    missing = [n for n in named if n not in blobs]
    if missing:
        raise CorruptInputError(
            f"{len(missing)} of the {len(named)} shards {DATASET_INFO} names are missing, "
            f"e.g. {missing[0]}",
            subject=f"{store.url}/{folder}/",
            fix="finish copying the folder (gsutil -m rsync), or pin another version",
        )
    unlisted = sorted(n for n in blobs if ".tfrecord" in n and n not in set(named))
    if unlisted:
        raise CorruptInputError(
            f"{len(unlisted)} TFRecord files are not named by {DATASET_INFO}, e.g. {unlisted[0]}",
            subject=f"{store.url}/{folder}/",
            fix="remove them (a leftover of another version or split), or replace the info file",
        )
    return RldsListing(dataset, version, info, features_doc, info_doc, {n: blobs[n] for n in named})
