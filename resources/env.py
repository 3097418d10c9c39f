"""Resources built from environment variables, with the documented defaults."""

from __future__ import annotations

import os

import dagster as dg

from episode_warehouse.paths import DEFAULT_ROOT, ROOT_ENV
from resources.atari_replay import DEFAULT_ATARI_URL, AtariReplaySource
from resources.openx_source import DEFAULT_OPENX_URL, OpenXSource
from resources.warehouse import WarehouseStorage


def _env(name: str, default: str) -> str | dg.EnvVar:
    """``EnvVar(name)`` when it is set (the UI then shows where the value came from), else the
    documented default."""
    return dg.EnvVar(name) if os.environ.get(name) else default


def _env_int(name: str, default: int) -> int | dg.EnvVar:
    return dg.EnvVar.int(name) if os.environ.get(name) else default


def build_resources() -> dict[str, dg.ConfigurableResource]:
    """The resources of the code location, keyed as the assets ask for them."""
    return {
        "warehouse": WarehouseStorage(root=_env(ROOT_ENV, DEFAULT_ROOT)),
        "atari_replay": AtariReplaySource(
            url=_env("ATARI_REPLAY_URL", DEFAULT_ATARI_URL),
            checkpoints=_env("ATARI_CHECKPOINTS", "all"),
            timeout_s=_env_int("ATARI_TIMEOUT_S", 60),
        ),
        "openx_source": OpenXSource(
            url=_env("OPENX_URL", DEFAULT_OPENX_URL),
            mode=_env("OPENX_MODE", "download"),
        ),
    }
