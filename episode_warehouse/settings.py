"""Every setting the domain package takes from the environment, named and defaulted in one place.

``Settings.from_env(**explicit)`` resolves them at once: an explicit value (a Dagster resource's
field, a function's argument) wins, else the variable, else the default. The warehouse root
(``WarehouseLayout.from_settings``) and a bucket root (``BucketRoot.parse``) keep what they were
resolved with, so one object decides where a run reads and writes.

- ``root``: ``EPISODE_WAREHOUSE_ROOT``, default ``./warehouse-data``.
- ``local_copy``: ``EPISODE_WAREHOUSE_LOCAL_COPY`` (``EPISODE_WAREHOUSE_SCRATCH`` before it had
  its own name, with a warning), default ``<tmp>/episode-warehouse-scratch``.
- ``cache``: ``EPISODE_WAREHOUSE_CACHE``, default ``~/.cache/episode-warehouse``.
- ``gcs_endpoint``: ``STORAGE_EMULATOR_HOST`` (as google-cloud-storage reads it), default GCS.
- ``hub_endpoint``: ``HF_ENDPOINT`` (as huggingface_hub reads it), default the hub.
- ``hub_cache``: ``HF_HUB_CACHE``, else ``HF_HOME/hub``, else huggingface_hub's default.
- ``allow_nonfinite``: ``EPISODE_WAREHOUSE_ALLOW_NONFINITE``, the decoded keys (other than
  actions, states and rewards, which are always refused) whose NaN or infinite values are
  published and counted instead of refused; ``*`` for every such key. Default: none.
- ``frames``: ``EPISODE_WAREHOUSE_FRAMES``, how camera frames are stored: ``encoded`` (the
  default: as the source encoded them, decoded where they are read; docs/frames.md) or
  ``decoded`` (raw uint8 rows: a plain TorchRL memmap, 8x-38x the bytes). An input of the
  decoded stage: changing it rebuilds the partitions it is changed for.
- ``verify_frames``: ``EPISODE_WAREHOUSE_VERIFY_FRAMES`` (``1``/``true`` or ``0``/``false``):
  every stored frame a reader decodes is first checked against the CRC-32C the TED stage wrote
  for it (bit rot or an altered file is refused, naming the row). Default: off (the integrity
  audit checks every frame at the catalog stage).

The export's PNG scratch (``EPISODE_WAREHOUSE_SCRATCH``), the worker counts and the input limits
are the Dagster resource's (``resources/warehouse.py``): no domain function reads them.
"""

from __future__ import annotations

import functools
import logging
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from episode_warehouse.errors import ConfigError

ROOT_ENV = "EPISODE_WAREHOUSE_ROOT"
DEFAULT_ROOT = "warehouse-data"
LOCAL_COPY_ENV = "EPISODE_WAREHOUSE_LOCAL_COPY"
# before LOCAL_COPY_ENV had its own name, the PNG scratch setting also meant this; still read
LEGACY_LOCAL_COPY_ENV = "EPISODE_WAREHOUSE_SCRATCH"
CACHE_ENV = "EPISODE_WAREHOUSE_CACHE"
DEFAULT_CACHE = "~/.cache/episode-warehouse"
EMULATOR_ENV = "STORAGE_EMULATOR_HOST"
HUB_ENDPOINT_ENV = "HF_ENDPOINT"
DEFAULT_HUB_ENDPOINT = "https://huggingface.co"
ALLOW_NONFINITE_ENV = "EPISODE_WAREHOUSE_ALLOW_NONFINITE"
FRAMES_ENV = "EPISODE_WAREHOUSE_FRAMES"
VERIFY_FRAMES_ENV = "EPISODE_WAREHOUSE_VERIFY_FRAMES"
ENCODED, DECODED = "encoded", "decoded"
FRAME_LAYOUTS = (ENCODED, DECODED)
# a cluster worker's name (`warehouse cluster up` sets it for each Celery worker) and the run tag
# that records it (resources/worker.py): names the cluster commands and the resources share,
# here so that the command line of a bare install (no wiring) imports them too
WORKER_ENV = "EPISODE_WAREHOUSE_WORKER"
WORKER_TAG = "warehouse/worker"
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Settings:
    """The resolved settings (see the module's table)."""

    root: str
    local_copy: Path
    cache: Path
    gcs_endpoint: str | None
    hub_endpoint: str
    hub_cache: str | None
    allow_nonfinite: frozenset[str] = frozenset()
    frames: str = ENCODED
    verify_frames: bool = False

    @classmethod
    def from_env(
        cls,
        env: Mapping[str, str] | None = None,
        *,
        root: str | os.PathLike | None = None,
        local_copy: str | os.PathLike | None = None,
        cache: str | os.PathLike | None = None,
        gcs_endpoint: str | None = None,
        hub_endpoint: str | None = None,
    ) -> Settings:
        """The settings from ``env`` (default: the process's environment now), each explicit
        value (not None, not empty) winning over its variable."""
        env = os.environ if env is None else env
        return cls(
            root=str(root or env.get(ROOT_ENV) or DEFAULT_ROOT),
            local_copy=_folder(local_copy or _local_copy_env(env) or _default_local_copy()),
            cache=_folder(cache or env.get(CACHE_ENV) or DEFAULT_CACHE),
            gcs_endpoint=gcs_endpoint or env.get(EMULATOR_ENV) or None,
            hub_endpoint=(hub_endpoint or env.get(HUB_ENDPOINT_ENV) or DEFAULT_HUB_ENDPOINT).rstrip(
                "/"
            ),
            hub_cache=_hub_cache(env),
            allow_nonfinite=frozenset(
                k.strip() for k in env.get(ALLOW_NONFINITE_ENV, "").split(",") if k.strip()
            ),
            frames=_frames(env.get(FRAMES_ENV, "").strip() or ENCODED),
            verify_frames=_switch(VERIFY_FRAMES_ENV, env.get(VERIFY_FRAMES_ENV, "")),
        )


def _switch(name: str, value: str) -> bool:
    text = value.strip().lower()
    if text in ("", "0", "false", "no", "off"):
        return False
    if text in ("1", "true", "yes", "on"):
        return True
    raise ConfigError(
        f"{name}={value!r} is neither on nor off", subject=name, fix=f"set {name}=1 or {name}=0"
    )


def _frames(value: str) -> str:
    if value not in FRAME_LAYOUTS:
        raise ConfigError(
            f"{FRAMES_ENV}={value!r} is not one of {', '.join(FRAME_LAYOUTS)}",
            subject=FRAMES_ENV,
            fix=f"set {FRAMES_ENV}=encoded (frames as the source encoded them) or decoded",
        )
    return value


def _folder(value: str | os.PathLike) -> Path:
    """Absolute and normalized, links not followed: a working folder that is a link is refused
    where it is written (``guards.names.no_links_below``), not silently replaced by its target."""
    return Path(os.path.abspath(Path(value).expanduser()))


def _default_local_copy() -> Path:
    return Path(tempfile.gettempdir()) / "episode-warehouse-scratch"


def _local_copy_env(env: Mapping[str, str]) -> str | None:
    if env.get(LOCAL_COPY_ENV):
        return env[LOCAL_COPY_ENV]
    if env.get(LEGACY_LOCAL_COPY_ENV):
        _warn_legacy_once(env[LEGACY_LOCAL_COPY_ENV])
        return env[LEGACY_LOCAL_COPY_ENV]
    return None


@functools.lru_cache(maxsize=1)
def _warn_legacy_once(value: str) -> None:
    log.warning(
        "%s set and %s not: a gs:// root's local copy goes under %s as before; set %s for it "
        "(%s now only places an export's PNG frames)",
        LEGACY_LOCAL_COPY_ENV, LOCAL_COPY_ENV, value, LOCAL_COPY_ENV, LEGACY_LOCAL_COPY_ENV,
    )  # fmt: skip


def _hub_cache(env: Mapping[str, str]) -> str | None:
    """huggingface_hub's cache folder from the environment now (its own constant is read when
    it is imported): ``HF_HUB_CACHE``, else ``HF_HOME/hub``, else its default (None)."""
    if env.get("HF_HUB_CACHE"):
        return env["HF_HUB_CACHE"]
    if env.get("HF_HOME"):
        return os.path.join(env["HF_HOME"], "hub")
    return None
