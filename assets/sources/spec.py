"""A source's Dagster part: its partitions, its own two assets, and how its sensor lists it.

The stages after ``decoded`` (TED, catalog rows, statistics, the partition's LeRobot export),
their checks, the source's sensor and the command line's stage table are generated from this
(``assets/graph.py``, ``sensors/sources.py``, ``warehouse_cli/runner.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import dagster as dg


@dataclass(frozen=True)
class SourceAssets:
    """Attributes:
    name: the source's registry name (``episode_warehouse.sources.registry``).
    partitions: its partitions definition (dynamic ones are added by the sensor and the CLI).
    raw, decoded: its raw stage asset and its decoded stage asset.
    group: the Dagster group of its raw, decoded and TED assets.
    resource_key: the resource the sensor lists the source with.
    listing: ``listing(resource) -> {partition: fingerprint}`` for the sensor.
    sensor_description: what the sensor does, for the UI.
    row_checks: extra asset-check factories over its catalog rows asset.
    """

    name: str
    partitions: dg.PartitionsDefinition
    raw: dg.AssetsDefinition
    decoded: dg.AssetsDefinition
    group: str
    resource_key: str
    listing: Callable[[Any], dict[str, str]]  # its own resource's type
    sensor_description: str
    row_checks: tuple[Callable[[dg.AssetsDefinition], dg.AssetChecksDefinition], ...] = field(
        default=()
    )

    @property
    def dynamic(self) -> str | None:
        """The dynamic partitions' name, or ``None`` for a fixed set of keys."""
        if isinstance(self.partitions, dg.DynamicPartitionsDefinition):
            return self.partitions.name
        return None
