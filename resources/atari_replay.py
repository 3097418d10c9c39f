"""The Atari DQN Replay source: a gs:// prefix (or a local mirror) in either layout."""

from __future__ import annotations

from enum import Enum

import dagster as dg

from episode_warehouse.blobstore import BlobStore, open_blob_store
from episode_warehouse.gcs import EMULATOR_ENV
from episode_warehouse.retry import RetryPolicy
from episode_warehouse.sources.atari.dopamine_files import CheckpointSubset
from episode_warehouse.sources.atari.mirror import LAYOUTS, MODES
from resources.settings import setting

DEFAULT_ATARI_URL = "gs://rl_unplugged/atari_episodes_ordered"


class AtariFormat(Enum):
    """``auto`` detects the layout per run from the listing."""

    auto = "auto"
    dopamine = "dopamine"
    rlu = "rlu"


class AtariMode(Enum):
    """``download`` mirrors the files first; ``streaming`` decodes from the bucket (RLU)."""

    download = "download"
    streaming = "streaming"


class AtariReplaySource(dg.ConfigurableResource):
    """``ATARI_REPLAY_URL`` (default: the RL Unplugged copy in episode order), its layout
    (``ATARI_FORMAT``: auto, dopamine, rlu), ``ATARI_MODE`` (download, or streaming for RL
    Unplugged), and the checkpoint subset (``ATARI_CHECKPOINTS``: all, first:K, last:K, or
    indices like 0,1,2 / 40-49). Requests are bounded by ``ATARI_TIMEOUT_S`` (60) and retried up
    to ``attempts`` times with exponential backoff; ``STORAGE_EMULATOR_HOST`` points GCS at an
    emulator."""

    url: str | None = None
    checkpoints: str | None = None
    format: AtariFormat | None = None
    mode: AtariMode | None = None
    timeout_s: int | None = None
    emulator_host: str | None = None
    download_workers: int = 4
    attempts: int = 6

    def endpoint(self) -> str | None:
        return setting(self.emulator_host, EMULATOR_ENV, "") or None

    def store(self) -> BlobStore:
        timeout = setting(self.timeout_s, "ATARI_TIMEOUT_S", 60, cast=int)
        return open_blob_store(
            setting(self.url, "ATARI_REPLAY_URL", DEFAULT_ATARI_URL),
            RetryPolicy(attempts=self.attempts, timeout_s=timeout),
            endpoint=self.endpoint(),
        )

    def subset(self) -> CheckpointSubset:
        return CheckpointSubset(setting(self.checkpoints, "ATARI_CHECKPOINTS", "all"))

    def layout(self) -> str:
        chosen = self.format.value if self.format is not None else None
        return setting(chosen, "ATARI_FORMAT", "auto", choices=LAYOUTS)

    def source_mode(self) -> str:
        chosen = self.mode.value if self.mode is not None else None
        return setting(chosen, "ATARI_MODE", "download", choices=MODES)
