"""Read-only SQL over the catalog: only SELECT statements, errors as one line."""

from __future__ import annotations

from pathlib import Path

import duckdb

from episode_warehouse.catalog.store import CatalogStore
from episode_warehouse.errors import CatalogQueryError, NotMaterializedError

_ALLOWED = {duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN}


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


def run_query(
    catalog_dir: Path, sql: str, params: list | None = None
) -> tuple[list[str], list[tuple]]:
    """Run one read-only query; return (column names, rows).

    Raises:
        NotMaterializedError: there is no catalog yet.
        CatalogQueryError: the query is not read-only or DuckDB rejects it (one-line message).
    """
    check_read_only(sql)
    db = CatalogStore(catalog_dir).db_path
    if not Path(db).exists():
        raise NotMaterializedError(
            "no catalog yet",
            subject=str(db),
            fix="materialize a partition first, e.g. 'warehouse demo'",
        )
    con = duckdb.connect(str(db), read_only=True)
    try:
        cur = con.execute(sql, params or [])
        cols = [d[0] for d in cur.description] if cur.description else []
        return cols, cur.fetchall()
    except duckdb.Error as exc:
        raise CatalogQueryError(str(exc).splitlines()[0], subject="query") from None
    finally:
        con.close()
