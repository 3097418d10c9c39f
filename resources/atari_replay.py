"""The Atari DQN Replay source: a gs:// prefix (or a local mirror) with <Game>/<run>/replay_logs."""

from __future__ import annotations

import dagster as dg

from episode_warehouse.atari.dopamine_files import CheckpointSubset
from episode_warehouse.blobstore import BlobStore, RetryPolicy, open_blob_store

DEFAULT_ATARI_URL = "gs://atari-replay-datasets/dqn"


class AtariReplaySource(dg.ConfigurableResource):
    """``ATARI_REPLAY_URL`` and the checkpoint subset (``ATARI_CHECKPOINTS``: all, first:K,
    last:K, or suffixes like 0,1,2 / 40-49). Downloads retry up to ``attempts`` times per file
    with exponential backoff, each request bounded by ``timeout_s``."""

    url: str = DEFAULT_ATARI_URL
    checkpoints: str = "all"
    download_workers: int = 4
    attempts: int = 6
    timeout_s: int = 60

    def store(self) -> BlobStore:
        return open_blob_store(
            self.url, RetryPolicy(attempts=self.attempts, timeout_s=self.timeout_s)
        )

    def subset(self) -> CheckpointSubset:
        return CheckpointSubset(self.checkpoints)
