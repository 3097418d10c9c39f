"""Farama Minari datasets: ``MINARI_URL``, Minari's default remote on the hub
(``hf://datasets/farama-minari``, an organization with a repo per namespace), or a local folder
or ``gs://bucket/prefix`` in ``MINARI_DATASETS_PATH`` layout
(``<namespace>/<env>/<name>-vN/data/``).
On the hub, huggingface_hub's own settings apply (``HF_ENDPOINT``, ``HF_TOKEN``,
``HF_HUB_CACHE``); the sensor watches the dataset ids ``MINARI_DATASETS`` names."""

from __future__ import annotations

import dagster as dg

from episode_warehouse.blobstore import BlobStore, open_blob_store
from episode_warehouse.errors import ConfigError
from episode_warehouse.gcs import EMULATOR_ENV
from episode_warehouse.hub.url import is_repo_id
from episode_warehouse.retry import RetryPolicy
from episode_warehouse.sources.minari.dataset_id import check_dataset_id
from resources.settings import setting

DEFAULT_URL = "hf://datasets/farama-minari"
_HUB = "hf://datasets/"


class MinariSource(dg.ConfigurableResource):
    """``MINARI_URL`` (default ``hf://datasets/farama-minari``); requests bounded by
    ``MINARI_TIMEOUT_S`` (60) and retried; ``STORAGE_EMULATOR_HOST`` points GCS at an emulator;
    ``MINARI_DATASETS`` (comma-separated dataset ids) are the hub datasets the sensor watches."""

    url: str | None = None
    datasets: str | None = None
    timeout_s: int | None = None
    emulator_host: str | None = None
    download_workers: int = 4
    attempts: int = 6

    def location(self) -> tuple[str, str]:
        """(the store's URL, the hub organization or ``""``)."""
        url = setting(self.url, "MINARI_URL", DEFAULT_URL).rstrip("/")
        if not url.startswith("hf://"):
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
        timeout = setting(self.timeout_s, "MINARI_TIMEOUT_S", 60, cast=int)
        store = open_blob_store(
            url,
            RetryPolicy(attempts=self.attempts, timeout_s=timeout),
            endpoint=setting(self.emulator_host, EMULATOR_ENV, "") or None,
        )
        return store, organization
