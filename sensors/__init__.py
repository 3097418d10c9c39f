"""Sensors: watch the sources and request runs for exactly the partitions that changed."""
