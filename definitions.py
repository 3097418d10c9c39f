"""The Dagster code location of the episode warehouse (``workspace.yaml`` points here)."""

import dagster as dg

from assets.graph import ALL_ASSETS, ALL_CHECKS
from assets.location import build_resources
from assets.publish import publish_to_hub
from sensors.sources import SENSORS

# One process per run, steps in order: a partition's stages hand over local files, and a
# subprocess per step would pay the torch import (seconds) four times. Runs of different
# partitions still execute in parallel (DAGSTER_HOME's run queue).
defs = dg.Definitions(
    assets=ALL_ASSETS,
    asset_checks=ALL_CHECKS,
    sensors=SENSORS,
    jobs=[publish_to_hub],
    resources=build_resources(),
    executor=dg.in_process_executor,
)
