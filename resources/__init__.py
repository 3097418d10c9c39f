"""Dagster resources of the warehouse's own systems, resolved from environment variables at run
start: its storage, how runs work, and the hub as a destination. Each source's own resource
lives in its asset module (``assets/sources/<name>.py``)."""

from resources.hub import HubDestination
from resources.run_settings import RunSettings
from resources.warehouse import WarehouseStorage

__all__ = ["HubDestination", "RunSettings", "WarehouseStorage"]
