"""LeRobot v3.0 datasets: ``LEROBOT_URL``, the hub (``hf://datasets``, the default: a partition
is a repo id, ``lerobot/pusht``), or a local folder or ``gs://bucket/prefix`` holding
``<owner>/<name>/meta/info.json``. On the hub, huggingface_hub's own settings apply
(``HF_ENDPOINT``, ``HF_TOKEN`` or the saved login, ``HF_HUB_CACHE``); the sensor watches the repos
``LEROBOT_REPOS`` names (the hub cannot be listed whole)."""

from __future__ import annotations

import dagster as dg

from episode_warehouse.blobstore import BlobStore, open_blob_store
from episode_warehouse.errors import ConfigError
from episode_warehouse.gcs import EMULATOR_ENV
from episode_warehouse.hub.url import parse_hub_url
from episode_warehouse.retry import RetryPolicy
from episode_warehouse.sources.lerobot.repo_id import check_repo_id
from resources.settings import setting

DEFAULT_URL = "hf://datasets"


class LeRobotSource(dg.ConfigurableResource):
    """``LEROBOT_URL`` (default ``hf://datasets``); requests bounded by ``LEROBOT_TIMEOUT_S`` (60)
    and retried; ``STORAGE_EMULATOR_HOST`` points GCS at an emulator; ``LEROBOT_REPOS``
    (comma-separated repo ids) are the hub datasets the sensor watches."""

    url: str | None = None
    repos: str | None = None
    timeout_s: int | None = None
    emulator_host: str | None = None
    download_workers: int = 4
    attempts: int = 6

    def source_url(self) -> str:
        url = setting(self.url, "LEROBOT_URL", DEFAULT_URL)
        if not url:
            raise ConfigError(
                "no LeRobot source is set",
                subject="LEROBOT_URL",
                fix=f"set LEROBOT_URL to {DEFAULT_URL}, a folder or gs://bucket/prefix holding "
                "<owner>/<name>/meta/",
            )
        if url.startswith("hf://") and parse_hub_url(url, setting="LEROBOT_URL").repo_id:
            raise ConfigError(
                "LEROBOT_URL names one repo; a LeRobot partition is the repo id",
                subject=f"LEROBOT_URL={url}",
                fix=f"set LEROBOT_URL={DEFAULT_URL} and materialize the repo id as the partition",
            )
        return url

    def watched_repos(self) -> list[str]:
        """The hub repos the sensor watches (``LEROBOT_REPOS``), checked."""
        text = setting(self.repos, "LEROBOT_REPOS", "")
        return [check_repo_id(r.strip()) for r in text.split(",") if r.strip()]

    def store(self) -> BlobStore:
        timeout = setting(self.timeout_s, "LEROBOT_TIMEOUT_S", 60, cast=int)
        return open_blob_store(
            self.source_url(),
            RetryPolicy(attempts=self.attempts, timeout_s=timeout),
            endpoint=setting(self.emulator_host, EMULATOR_ENV, "") or None,
        )
