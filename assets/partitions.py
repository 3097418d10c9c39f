"""Partitions that belong to no source: named export selections (dynamic). Each source's
partitions live with its assets (``assets/sources/<name>.py``)."""

import dagster as dg

lerobot_selections = dg.DynamicPartitionsDefinition(name="lerobot_selections")
