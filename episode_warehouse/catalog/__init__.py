"""The DuckDB episode catalog: per-partition Parquet files published atomically, plus views.

Layout (``<root>/catalog/``)::

    catalog.duckdb                       # views only; rebuilt aside and renamed into place
    episodes/<source>/<partition>.parquet
    partitions/<source>/<partition>.parquet

Writers never open the DuckDB file while publishing rows: a partition's rows are one Parquet
file, renamed into place, so readers (``duckdb.connect(path, read_only=True)``, ``warehouse
sql``) see a partition entirely or not at all, and never wait for a lock.
"""

from episode_warehouse.catalog.query import run_query
from episode_warehouse.catalog.schema import EPISODES, PARTITIONS
from episode_warehouse.catalog.store import CatalogStore

__all__ = ["EPISODES", "PARTITIONS", "CatalogStore", "run_query"]
