"""The Dagster code location of the episode warehouse (``workspace.yaml`` points here)."""

import dagster as dg

from assets.graph import ALL_ASSETS
from resources import build_resources

defs = dg.Definitions(assets=ALL_ASSETS, resources=build_resources())
