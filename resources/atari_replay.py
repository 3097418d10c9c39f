"""The Atari DQN Replay source: a gs:// prefix (or a local mirror) with <Game>/<run>/replay_logs."""

from __future__ import annotations

import dagster as dg

from episode_warehouse.atari.dopamine_files import CheckpointSubset
from episode_warehouse.blobstore import BlobStore, open_blob_store
from episode_warehouse.gcs import EMULATOR_ENV
from episode_warehouse.retry import RetryPolicy
from resources.settings import setting

DEFAULT_ATARI_URL = "gs://atari-replay-datasets/dqn"


class AtariReplaySource(dg.ConfigurableResource):
    """``ATARI_REPLAY_URL`` and the checkpoint subset (``ATARI_CHECKPOINTS``: all, first:K,
    last:K, or suffixes like 0,1,2 / 40-49). Requests are bounded by ``ATARI_TIMEOUT_S`` (60)
    and retried up to ``attempts`` times with exponential backoff; ``STORAGE_EMULATOR_HOST``
    points GCS at an emulator."""

    url: str | None = None
    checkpoints: str | None = None
    timeout_s: int | None = None
    emulator_host: str | None = None
    download_workers: int = 4
    attempts: int = 6

    def store(self) -> BlobStore:
        timeout = setting(self.timeout_s, "ATARI_TIMEOUT_S", 60, cast=int)
        return open_blob_store(
            setting(self.url, "ATARI_REPLAY_URL", DEFAULT_ATARI_URL),
            RetryPolicy(attempts=self.attempts, timeout_s=timeout),
            endpoint=setting(self.emulator_host, EMULATOR_ENV, "") or None,
        )

    def subset(self) -> CheckpointSubset:
        return CheckpointSubset(setting(self.checkpoints, "ATARI_CHECKPOINTS", "all"))
