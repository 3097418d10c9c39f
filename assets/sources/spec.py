"""A source's Dagster part: its partitions, its own two assets, its resource, how its sensor
lists it, and what a run of it needs on Kubernetes.

The stages after ``decoded`` (TED, catalog rows, statistics, the partition's LeRobot export),
their checks, the source's sensor, its resource in the code location (``build_resources``), its
pod size (``warehouse_cli/cluster/kubernetes.py``) and the command line's stage table are
generated from this (``assets/graph.py``, ``sensors/sources.py``, ``warehouse_cli/runner.py``),
so a new source declares them here, in its own module, and edits no shared file.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import dagster as dg

# one partition's run, where a source says nothing else
DEFAULT_POD = {"requests": {"cpu": "2", "memory": "8Gi"}, "limits": {"memory": "16Gi"}}


@dataclass(frozen=True)
class SourceAssets:
    """Attributes:
    name: the source's registry name (``episode_warehouse.sources.registry``).
    partitions: its partitions definition (dynamic ones are added by the sensor and the CLI).
    raw, decoded: its raw stage asset and its decoded stage asset.
    group: the Dagster group of its raw, decoded and TED assets.
    resource_key: the key of its resource (what its raw asset and its sensor ask for).
    resource: that resource (a ``dg.ConfigurableResource`` reading its own variables when a
        run starts), added to the code location's resources.
    listing: ``listing(resource) -> {partition: fingerprint}`` for the sensor.
    sensor_description: what the sensor does, for the UI.
    row_checks: extra asset-check factories over its catalog rows asset.
    pod: what one run (one partition) requests and may use on Kubernetes.
    """

    name: str
    partitions: dg.PartitionsDefinition
    raw: dg.AssetsDefinition
    decoded: dg.AssetsDefinition
    group: str
    resource_key: str
    resource: Any  # a dg.ConfigurableResource of the source's own type
    listing: Callable[[Any], dict[str, str]]  # its own resource's type
    sensor_description: str
    row_checks: tuple[Callable[[dg.AssetsDefinition], dg.AssetChecksDefinition], ...] = field(
        default=()
    )
    pod: dict = field(default_factory=lambda: dict(DEFAULT_POD))

    @property
    def dynamic(self) -> str | None:
        """The dynamic partitions' name, or ``None`` for a fixed set of keys."""
        if isinstance(self.partitions, dg.DynamicPartitionsDefinition):
            return self.partitions.name
        return None
