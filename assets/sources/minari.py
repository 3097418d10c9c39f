"""Farama Minari datasets: mirrored files -> decoded episodes (TED and catalog from factories).

Its resource, ``MinariSource``: ``MINARI_URL``, Minari's default remote on the hub
(``hf://datasets/farama-minari``, an organization with a repo per namespace), or a local folder
or ``gs://bucket/prefix`` in ``MINARI_DATASETS_PATH`` layout
(``<namespace>/<env>/<name>-vN/data/``). On the hub, huggingface_hub's own settings apply
(``HF_ENDPOINT``, ``HF_TOKEN``, ``HF_HUB_CACHE``); the sensor watches the dataset ids
``MINARI_DATASETS`` names.
"""

import dagster as dg

from assets.results import decoded_result, mirrored_result
from assets.sources.spec import SourceAssets, SourceResource
from assets.stage import Stage, StageRun
from episode_warehouse.blobstore import BlobStore, open_blob_store
from episode_warehouse.errors import ConfigError
from episode_warehouse.gcs import url_scheme
from episode_warehouse.hub.url import is_repo_id
from episode_warehouse.sources.minari.dataset_id import check_dataset_id
from episode_warehouse.sources.minari.fingerprints import minari_fingerprints
from episode_warehouse.sources.minari.mirror import mirror_dataset
from episode_warehouse.sources.minari.stage import decode_minari_stage
from resources.settings import setting

DEFAULT_URL = "hf://datasets/farama-minari"
_HUB = "hf://datasets/"


class MinariSource(SourceResource):
    """``MINARI_URL`` (default ``hf://datasets/farama-minari``); requests bounded by
    ``MINARI_TIMEOUT_S`` (60) and retried; ``STORAGE_EMULATOR_HOST`` points GCS at an emulator;
    ``MINARI_DATASETS`` (comma-separated dataset ids) are the hub datasets the sensor watches."""

    url: str | None = None
    datasets: str | None = None

    def location(self) -> tuple[str, str]:
        """(the store's URL, the hub organization or ``""``)."""
        url = setting(self.url, "MINARI_URL", DEFAULT_URL).rstrip("/")
        if url_scheme(url) != "hf":
            return url, ""
        organization = url[len(_HUB) :] if url.startswith(_HUB) else ""
        if not organization or "/" in organization or not is_repo_id(f"{organization}/x"):
            raise ConfigError(
                "a Minari remote on the hub is an organization",
                subject=f"MINARI_URL={url}",
                fix=f"write {DEFAULT_URL} (Minari's) or hf://datasets/<your organization>",
            )
        return "hf://datasets", organization

    def watched_datasets(self) -> list[str]:
        text = setting(self.datasets, "MINARI_DATASETS", "")
        return [check_dataset_id(d.strip()) for d in text.split(",") if d.strip()]

    def store(self) -> tuple[BlobStore, str]:
        """The store and the organization the datasets are under (``""`` off the hub)."""
        url, organization = self.location()
        store = open_blob_store(
            url,
            self.policy("MINARI_TIMEOUT_S"),
            endpoint=self.endpoint(),
        )
        return store, organization


minari_datasets = dg.DynamicPartitionsDefinition(name="minari_datasets")  # dataset ids
# this source's code versions (assets/versions.py's rule: bump when a byte of the output changes)
FILES_VERSION = "1"
EPISODES_VERSION = "2"  # 2: truncations kept as recorded (#48)


def mirror_files(stage: StageRun) -> dg.MaterializeResult:
    # Idempotent: files whose size and generation match the published record are linked.
    target, common = stage.raw_folder("minari")
    store, organization = stage.source.store()
    built, report = mirror_dataset(store, organization, stage.key, target, **common)
    return mirrored_result(built, report, target)


def decode_episodes(stage: StageRun) -> dg.MaterializeResult:
    dataset_id, layout = stage.key, stage.warehouse.layout()
    # Idempotent: rebuilt only when the files or this code version changed.
    built = decode_minari_stage(layout, dataset_id, **stage.decode_args())
    return decoded_result(
        built,
        layout.decoded_dir("minari", dataset_id),
        backend=built.meta.extra.get("minari", {}).get("data_format", ""),
        keys=dg.MetadataValue.json(built.meta.arrays),
    )


ASSETS = SourceAssets(
    name="minari",
    partitions=minari_datasets,
    files=Stage(
        "minari_files",
        mirror_files,
        "The data/ files of one Minari dataset (namespace/env/name-vN), mirrored from "
        "MINARI_URL and checksummed.",
        {"minari", "hdf5"},
        FILES_VERSION,
    ),
    episodes=Stage(
        "minari_episodes",
        decode_episodes,
        "Every step of one Minari dataset (any backend: hdf5, arrow, parquet), keys as TorchRL's "
        "MinariExperienceReplay names them, each episode's final observation kept.",
        {"numpy"},
        EPISODES_VERSION,
    ),
    resource_key="minari_source",
    resource=MinariSource(),
    listing=lambda minari_source: minari_fingerprints(
        minari_source.store()[0], minari_source.location()[1], minari_source.watched_datasets()
    ),
    sensor_description="Lists MINARI_URL; adds new namespace/env/name-vN datasets as "
    "partitions and requests minari_files for each dataset whose files appeared or changed.",
    pod={"requests": {"cpu": "2", "memory": "8Gi"}, "limits": {"memory": "16Gi"}},
)
