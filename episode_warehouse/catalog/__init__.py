"""The DuckDB episode catalog: per-partition Parquet files published atomically, plus views.

Layout (``<root>/catalog/``)::

    catalog.duckdb                       # views only; rebuilt aside and renamed into place
    episodes/<source>/<partition>.parquet
    partitions/<source>/<partition>.parquet

Writers never open the DuckDB file while publishing rows: a partition's rows are one Parquet
file, renamed into place, so readers (``duckdb.connect(path, read_only=True)``, ``warehouse
sql``) see a partition entirely or not at all, and never wait for a lock.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from episode_warehouse.catalog.query import run_query
    from episode_warehouse.catalog.schema import EPISODES, PARTITIONS
    from episode_warehouse.catalog.store import CatalogStore

__all__ = ["EPISODES", "PARTITIONS", "CatalogStore", "run_query"]
_HOMES = {
    "run_query": "query",
    "EPISODES": "schema",
    "PARTITIONS": "schema",
    "CatalogStore": "store",
}


def __getattr__(name: str):
    # Lazy, so that the query's child process (sandbox.py) imports DuckDB and nothing else
    if name in _HOMES:
        return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
    raise AttributeError(name)
