"""Dagster assets: thin wiring from partition keys through resources to one domain call."""
