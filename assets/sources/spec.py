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

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import dagster as dg

from assets import versions
from assets.retries import RAW_RETRY_POLICY, only_transient_retries
from episode_warehouse.gcs import EMULATOR_ENV
from episode_warehouse.retry import RetryPolicy
from episode_warehouse.sources import registry
from resources import RunSettings, WarehouseStorage
from resources.settings import setting

# one partition's run, where a source says nothing else
DEFAULT_POD = {"requests": {"cpu": "2", "memory": "8Gi"}, "limits": {"memory": "16Gi"}}
OWNERS = ["team:data-platform"]


class SourceMode(Enum):
    """``download`` mirrors a partition's files under the root first; ``streaming`` decodes
    straight from the source (the sources whose reader can: RL Unplugged, OpenX)."""

    download = "download"
    streaming = "streaming"


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

    def policy(self, timeout_env: str) -> RetryPolicy:
        """Requests bounded by ``timeout_env`` (default 60 s), retried ``attempts`` times."""
        timeout = setting(self.timeout_s, timeout_env, 60, cast=int)
        return RetryPolicy(attempts=self.attempts, timeout_s=timeout)


@dataclass(frozen=True)
class StageRun:
    """What one materialization of a source's stage gets: the partition key (checked), the
    source's resource, the warehouse's storage, the run's settings, the code version."""

    key: str
    source: Any  # the source's own resource
    warehouse: WarehouseStorage
    settings: RunSettings
    code_version: str


@dataclass(frozen=True)
class Stage:
    """One of a source's own stages.

    Attributes:
        name: the asset's name (``atari_replay_files``).
        run: the stage: partition key (checked) -> one domain call -> the MaterializeResult.
        description: what the asset is, for the UI.
        kinds: the UI's kind tags.
        code_version: bumped when a byte of its output changes (``assets/versions.py``).
    """

    name: str
    run: Callable[[StageRun], dg.MaterializeResult]
    description: str
    kinds: frozenset[str] | set[str]
    code_version: str


@dataclass(frozen=True)
class SourceAssets:
    """Attributes:
    name: the source's registry name (``episode_warehouse.sources.registry``).
    partitions: its partitions definition (dynamic ones are added by the sensor and the CLI).
    files, episodes: its raw stage and its decoded stage (their assets: ``raw``, ``decoded``).
    group: the Dagster group of its raw, decoded and TED assets.
    resource_key: the key of its resource (what its stages and its sensor ask for).
    resource: that resource (a ``dg.ConfigurableResource`` reading its own variables when a
        run starts), added to the code location's resources.
    listing: ``listing(resource) -> {partition: fingerprint}`` for the sensor.
    sensor_description: what the sensor does, for the UI.
    row_checks: extra asset-check factories over its catalog rows asset.
    pod: what one run (one partition) requests and may use on Kubernetes.
    """

    name: str
    partitions: dg.PartitionsDefinition
    files: Stage
    episodes: Stage
    group: str
    resource_key: str
    resource: Any  # a dg.ConfigurableResource of the source's own type
    resource_type: type
    listing: Callable[[Any], dict[str, str]]  # its own resource's type
    sensor_description: str
    row_checks: tuple[Callable[[dg.AssetsDefinition], dg.AssetChecksDefinition], ...] = field(
        default=()
    )
    pod: dict = field(default_factory=lambda: dict(DEFAULT_POD))
    raw: dg.AssetsDefinition = field(init=False)
    decoded: dg.AssetsDefinition = field(init=False)

    def __post_init__(self) -> None:
        raw = dg.asset(
            name=self.files.name,
            partitions_def=self.partitions,
            group_name=self.group,
            pool="download",  # bounded across runs and machines (docs/cluster.md)
            kinds=set(self.files.kinds),
            code_version=self.files.code_version,
            retry_policy=RAW_RETRY_POLICY,
            owners=OWNERS,
            description=self.files.description,
        )(self._body(self.files))
        decoded = dg.asset(
            name=self.episodes.name,
            partitions_def=self.partitions,
            deps=[raw],
            group_name=self.group,
            kinds=set(self.episodes.kinds),
            code_version=self.episodes.code_version,
            automation_condition=dg.AutomationCondition.eager(),
            owners=OWNERS,
            description=self.episodes.description,
        )(self._body(self.episodes))
        object.__setattr__(self, "raw", raw)
        object.__setattr__(self, "decoded", decoded)

    def _body(self, stage: Stage):
        """The asset function of ``stage``: the partition key checked, the stage run with the
        source's resource and the warehouse's, terminal errors not retried. Its signature names
        the source's resource key, so Dagster passes that resource (and so may a test)."""
        source, key_name = self.name, self.resource_key

        def body(context: dg.AssetExecutionContext, **resources) -> dg.MaterializeResult:
            with only_transient_retries(context):
                key = registry.check_partition(source, context.partition_key)
                return stage.run(
                    StageRun(
                        key,
                        resources[key_name],
                        resources["warehouse"],
                        resources["run_settings"],
                        versions.of(context),
                    )
                )

        p = inspect.Parameter
        params = [
            p("context", p.POSITIONAL_OR_KEYWORD, annotation=dg.AssetExecutionContext),
            p(key_name, p.KEYWORD_ONLY, annotation=self.resource_type),
            p("warehouse", p.KEYWORD_ONLY, annotation=WarehouseStorage),
            p("run_settings", p.KEYWORD_ONLY, annotation=RunSettings),
        ]
        body.__signature__ = inspect.Signature(params, return_annotation=dg.MaterializeResult)  # type: ignore[attr-defined]
        body.__annotations__ = {
            **{q.name: q.annotation for q in params}, "return": dg.MaterializeResult,
        }  # fmt: skip
        body.__name__ = body.__qualname__ = stage.name
        body.__doc__ = stage.description
        return body

    @property
    def dynamic(self) -> str | None:
        """The dynamic partitions' name, or ``None`` for a fixed set of keys."""
        if isinstance(self.partitions, dg.DynamicPartitionsDefinition):
            return self.partitions.name
        return None
