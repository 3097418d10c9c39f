"""Read-only SQL over the catalog, on a connection that can read the catalog and nothing else.

Every user query (``warehouse sql``, ``select_episodes``, named selections, asset checks) runs
here. Statements other than SELECT/EXPLAIN are refused before DuckDB sees them, and the
connection itself is sandboxed: ``enable_external_access = false`` with the catalog folder as
the only allowed directory (``read_text('/etc/passwd')``, ``glob``, ``read_csv``, ``ATTACH`` of
other files are refused, naming the path), ``lock_configuration = true`` (a query cannot undo
it), a memory limit, and a timeout that interrupts the query. With a bucket root the allowed
directory is ``gs://.../catalog/``, read through a registered gcsfs filesystem.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

import duckdb

from episode_warehouse.catalog.store import CatalogStore
from episode_warehouse.errors import CatalogQueryError, NotMaterializedError

_ALLOWED = {duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN}


@dataclass(frozen=True)
class QueryLimits:
    """Bounds of one query: wall time, DuckDB memory, and how many rows are fetched."""

    timeout_s: float = 60.0
    memory_limit: str = "2GB"
    max_rows: int | None = None  # None: all rows


def check_read_only(sql: str) -> None:
    """Refuse anything but SELECT (and EXPLAIN) statements.

    Raises:
        CatalogQueryError: a write, DDL, COPY, ATTACH, PRAGMA or an unparsable query.
    """
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise CatalogQueryError(str(exc).splitlines()[0], subject="query") from None
    if not statements:
        raise CatalogQueryError("empty query", subject="query", fix="write a SELECT statement")
    for st in statements:
        if st.type not in _ALLOWED:
            raise CatalogQueryError(
                f"{st.type.name} statements are refused: the catalog is read-only here",
                subject="query",
                fix="write a SELECT statement; the warehouse writes the catalog",
            )


def connect(catalog_dir: Path, limits: QueryLimits) -> duckdb.DuckDBPyConnection:
    """An in-memory connection with the catalog's views, that can read no file outside
    ``catalog_dir``.

    The views are made for the folder as it is now (``catalog.duckdb`` keeps them for other
    DuckDB clients), so a warehouse root that was moved or copied still queries itself.

    Raises:
        NotMaterializedError: there is no catalog yet.
    """
    store = CatalogStore(Path(catalog_dir).resolve())
    if not store.has_rows():
        raise NotMaterializedError(
            "no catalog yet",
            subject=store.url if store.bucket else str(store.db_path),
            fix="materialize a partition first, e.g. 'warehouse demo'",
        )
    con = duckdb.connect(":memory:")
    if store.bucket is not None:
        from episode_warehouse.bucket.catalog_files import filesystem

        con.register_filesystem(filesystem())
    con.execute("SET allowed_directories = [?]", [store.url + "/"])
    for statement in store.view_statements():
        con.execute(statement)
    con.execute("SET enable_external_access = false")
    con.execute("SET memory_limit = ?", [limits.memory_limit])
    con.execute("SET enable_progress_bar = false")
    con.execute("SET lock_configuration = true")
    return con


def _error(exc: duckdb.Error, limits: QueryLimits, timed_out: bool) -> CatalogQueryError:
    text = str(exc).splitlines()[0]
    if timed_out:
        return CatalogQueryError(
            f"the query ran longer than {limits.timeout_s:g} s and was stopped",
            subject="query",
            fix="narrow it (WHERE, LIMIT), or raise the timeout (--timeout, "
            "EPISODE_WAREHOUSE_SQL_TIMEOUT_S)",
        )
    if isinstance(exc, duckdb.PermissionException):
        return CatalogQueryError(
            f"{text.removeprefix('Permission Error: ')}: queries may read only the catalog",
            subject="query",
            fix="query the catalog's views (episodes, partitions); files outside it are refused",
        )
    if isinstance(exc, duckdb.OutOfMemoryException):
        return CatalogQueryError(
            f"{text} (limit {limits.memory_limit})",
            subject="query",
            fix="narrow it, or raise the limit (--memory-limit, EPISODE_WAREHOUSE_SQL_MEMORY)",
        )
    return CatalogQueryError(text, subject="query")


def run_query(
    catalog_dir: Path,
    sql: str,
    params: list | None = None,
    *,
    limits: QueryLimits | None = None,
) -> tuple[list[str], list[tuple]]:
    """Run one read-only query; return (column names, rows), at most ``limits.max_rows`` rows.

    Raises:
        NotMaterializedError: there is no catalog yet.
        CatalogQueryError: the query is not read-only, reads outside the catalog, runs past the
            timeout or memory limit, or DuckDB rejects it (one-line message).
    """
    limits = limits or QueryLimits()
    check_read_only(sql)
    con = connect(catalog_dir, limits)
    timed_out = threading.Event()

    def stop() -> None:
        timed_out.set()
        con.interrupt()

    timer = threading.Timer(limits.timeout_s, stop)
    timer.start()
    try:
        cur = con.execute(sql, params or [])
        cols = [d[0] for d in cur.description] if cur.description else []
        rows = cur.fetchall() if limits.max_rows is None else cur.fetchmany(limits.max_rows)
        return cols, rows
    except duckdb.Error as exc:
        raise _error(exc, limits, timed_out.is_set()) from None
    finally:
        timer.cancel()
        con.close()
