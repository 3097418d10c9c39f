"""LeRobot v3.0 datasets: ``LEROBOT_URL``, a local folder or ``gs://bucket/prefix`` holding
``<owner>/<name>/meta/info.json`` (the hub, ``hf://datasets``, is not read by this version)."""

from __future__ import annotations

import dagster as dg

from episode_warehouse.blobstore import BlobStore, open_blob_store
from episode_warehouse.errors import ConfigError
from episode_warehouse.gcs import EMULATOR_ENV
from episode_warehouse.retry import RetryPolicy
from resources.settings import setting


class LeRobotSource(dg.ConfigurableResource):
    """``LEROBOT_URL`` (required to materialize a LeRobot partition); requests bounded by
    ``LEROBOT_TIMEOUT_S`` (60) and retried; ``STORAGE_EMULATOR_HOST`` points GCS at an emulator."""

    url: str | None = None
    timeout_s: int | None = None
    emulator_host: str | None = None
    download_workers: int = 4
    attempts: int = 6

    def source_url(self) -> str:
        url = setting(self.url, "LEROBOT_URL", "")
        if not url:
            raise ConfigError(
                "no LeRobot source is set",
                subject="LEROBOT_URL",
                fix="set LEROBOT_URL to a folder or gs://bucket/prefix holding "
                "<owner>/<name>/meta/",
            )
        if url.startswith("hf://"):
            raise ConfigError(
                "the hub is not read by this version",
                subject=url,
                fix="download the dataset (huggingface-cli download --repo-type dataset ...) "
                "into a folder <owner>/<name>/ and point LEROBOT_URL at it",
            )
        return url

    def store(self) -> BlobStore:
        timeout = setting(self.timeout_s, "LEROBOT_TIMEOUT_S", 60, cast=int)
        return open_blob_store(
            self.source_url(),
            RetryPolicy(attempts=self.attempts, timeout_s=timeout),
            endpoint=setting(self.emulator_host, EMULATOR_ENV, "") or None,
        )
