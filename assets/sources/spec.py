"""A source's Dagster part, declared once: its partitions, its resource, its two stages (raw
files, decoded episodes), how its sensor lists it, and what a run of it needs on Kubernetes.

The two stages' assets are generated from the declaration (:class:`Stage`: the asset's name,
the one domain call, how the UI shows it), as ``assets/graph.py`` generates the stages after
``decoded`` (TED, catalog rows, statistics, the partition's LeRobot export), their checks, the
source's sensor (``sensors/sources.py``), its resource in the code location
(``assets/location.py``), its pod size and the command line's stage table. A new source is its
folder under ``episode_warehouse/sources``, one module here and one line in each registry.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

import dagster as dg

from assets.retries import RAW_RETRY_POLICY
from assets.stage import Check, Stage, stage_asset
from episode_warehouse.gcs import EMULATOR_ENV
from episode_warehouse.retry import RetryPolicy
from resources.settings import setting

# one partition's run, where a source says nothing else
DEFAULT_POD = {"requests": {"cpu": "2", "memory": "8Gi"}, "limits": {"memory": "16Gi"}}


class SourceMode(Enum):
    """``download`` mirrors a partition's files under the root first; ``streaming`` decodes
    straight from the source (the sources whose reader can: RL Unplugged, OpenX)."""

    download = "download"
    streaming = "streaming"


class AtariFormat(Enum):
    """Atari DQN Replay's layouts; ``auto`` detects the layout per run from the listing."""

    auto = "auto"
    dopamine = "dopamine"
    rlu = "rlu"


class OpenXFormat(Enum):
    """Open X-Embodiment's layouts; ``auto`` tells them apart per dataset from the listing."""

    auto = "auto"
    rlds = "rlds"
    webdataset = "webdataset"


class SourceResource(dg.ConfigurableResource):
    """What every source's resource has: the requests' bound and retries, the GCS emulator,
    the raw stage's parallel downloads. A source's own resource adds its URL and choices;
    ``timeout_env`` names its timeout variable (``ATARI_TIMEOUT_S``; default 60 s)."""

    timeout_s: int | None = None
    emulator_host: str | None = None
    download_workers: int = 4
    attempts: int = 6

    def endpoint(self) -> str | None:
        """The GCS API's endpoint: ``STORAGE_EMULATOR_HOST``, else GCS itself (None)."""
        return setting(self.emulator_host, EMULATOR_ENV, "") or None

    def chosen(self, field: str, variable: str, default: str, choices) -> str:
        """The choice of the resource's ``field`` (an Enum, set in the UI's config), else of
        ``variable``, else ``default``; one of ``choices``."""
        given = getattr(self, field, None)
        return setting(given.value if given is not None else None, variable, default,
                       choices=choices)  # fmt: skip

    def policy(self, timeout_env: str) -> RetryPolicy:
        """Requests bounded by ``timeout_env`` (default 60 s), retried ``attempts`` times."""
        timeout = setting(self.timeout_s, timeout_env, 60, cast=int)
        return RetryPolicy(attempts=self.attempts, timeout_s=timeout)


@dataclass(frozen=True)
class SourceAssets:
    """Attributes:
    name: the source's registry name (``episode_warehouse.sources.registry``).
    partitions: its partitions definition (dynamic ones are added by the sensor and the CLI).
    files, episodes: its raw stage and its decoded stage (their assets: ``raw``, ``decoded``).
    resource_key: the key of its resource (what its stages and its sensor ask for).
    resource: that resource (a ``dg.ConfigurableResource`` reading its own variables when a
        run starts), added to the code location's resources; its stages ask for its type.
    listing: ``listing(resource) -> {partition: fingerprint}`` for the sensor.
    sensor_description: what the sensor does, for the UI.
    row_checks: extra checks of its catalog rows asset.
    pod: what one run (one partition) requests and may use on Kubernetes.
    group: the Dagster group of its raw, decoded and TED assets (default: its name).
    resource_type: the type its stages ask for, where ``resource`` is None (a test's source,
        given its resource per run); default: ``type(resource)``.
    """

    name: str
    partitions: dg.PartitionsDefinition
    files: Stage
    episodes: Stage
    resource_key: str
    resource: Any  # a dg.ConfigurableResource of the source's own type
    listing: Callable[[Any], dict[str, str]]  # its own resource's type
    sensor_description: str
    row_checks: tuple[Check, ...] = ()
    pod: dict = field(default_factory=lambda: dict(DEFAULT_POD))
    group: str = ""
    resource_type: type | None = None  # default: the resource's own type
    raw: dg.AssetsDefinition = field(init=False)
    decoded: dg.AssetsDefinition = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "group", self.group or self.name)
        resource_type = self.resource_type or type(self.resource)
        object.__setattr__(self, "resource_type", resource_type)

        def asset(stage: Stage, *deps: dg.AssetsDefinition) -> dg.AssetsDefinition:
            return stage_asset(stage, source=self.name, partitions=self.partitions, deps=deps,
                               resource=(self.resource_key, resource_type))  # fmt: skip

        # the raw stage in the download pool (bounded across runs and machines: docs/cluster.md)
        raw = asset(replace(self.files, group=self.group, eager=False, pool="download",
                            retry_policy=RAW_RETRY_POLICY))  # fmt: skip
        decoded = asset(replace(self.episodes, group=self.group), raw)
        object.__setattr__(self, "raw", raw)
        object.__setattr__(self, "decoded", decoded)

    @property
    def dynamic(self) -> str | None:
        """The dynamic partitions' name, or ``None`` for a fixed set of keys."""
        if isinstance(self.partitions, dg.DynamicPartitionsDefinition):
            return self.partitions.name
        return None
