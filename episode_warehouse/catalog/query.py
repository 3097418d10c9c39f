"""Read-only SQL over the catalog, on a connection that can read the catalog and nothing else.

Every user query (``warehouse sql``, ``select_episodes``, named selections, asset checks) runs
here. Statements other than SELECT/EXPLAIN are refused before DuckDB sees them, and the
connection itself is sandboxed: ``enable_external_access = false`` with the catalog folder as
the only allowed directory (``read_text('/etc/passwd')``, ``glob``, ``read_csv``, ``ATTACH`` of
other files are refused, naming the path), ``lock_configuration = true`` (a query cannot undo
it), DuckDB's memory limit, and a private temp directory. The connection lives in a child
process (``sandbox.py``) with a hard memory bound, killed at the timeout. With a bucket root
the allowed directory is ``gs://.../catalog/``, read through a registered gcsfs filesystem.
"""

from __future__ import annotations

import functools
import logging
import re
from dataclasses import dataclass

import duckdb

from episode_warehouse.catalog.freshness import freshness_checks, freshness_warning
from episode_warehouse.catalog.sandbox import Answer, duckdb_message, parse_size, run_in_child
from episode_warehouse.catalog.store import CatalogStore
from episode_warehouse.errors import CatalogQueryError, NotMaterializedError
from episode_warehouse.storage import Root

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class QueryLimits:
    """Bounds of one query: wall time, DuckDB memory, and how many rows are fetched."""

    timeout_s: float = 60.0
    memory_limit: str = "2GB"
    max_rows: int | None = None  # None: all rows


# comments and white space, then EXPLAIN [ANALYZE] [(options)]: what is left is the statement
# EXPLAIN wraps (EXPLAIN ANALYZE runs it)
_GAP = r"(?:\s+|--[^\n]*(?:\n|$)|/\*.*?\*/)*"
_EXPLAIN = re.compile(
    rf"^{_GAP}EXPLAIN\b{_GAP}(?:ANALY[SZ]E\b{_GAP})?(?:\([^()]*\){_GAP})?",
    re.IGNORECASE | re.DOTALL,
)
_READ_ONLY_FIX = "write a SELECT statement; the warehouse writes the catalog"


def check_read_only(sql: str) -> None:
    """Refuse anything but SELECT statements and EXPLAIN of a SELECT (what an EXPLAIN wraps is
    checked as a statement of its own: ``EXPLAIN ANALYZE COPY ... TO`` runs the COPY).

    Raises:
        CatalogQueryError: a write, DDL, COPY, ATTACH, PRAGMA or SET (wrapped or not), or an
            unparsable query.
    """
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise CatalogQueryError(duckdb_message(exc), subject="query") from None
    if not statements:
        raise CatalogQueryError("empty query", subject="query", fix="write a SELECT statement")
    for st in statements:
        if st.type == duckdb.StatementType.EXPLAIN:
            wrapped = _EXPLAIN.match(st.query)
            if wrapped is None or not st.query[wrapped.end() :].strip(" \t\n;"):
                raise CatalogQueryError(
                    "an EXPLAIN whose statement cannot be checked is refused",
                    subject="query",
                    fix="write EXPLAIN SELECT ... (or EXPLAIN ANALYZE SELECT ...)",
                )
            check_read_only(st.query[wrapped.end() :])
        elif st.type != duckdb.StatementType.SELECT:
            raise CatalogQueryError(
                f"{st.type.name} statements are refused: the catalog is read-only here",
                subject="query",
                fix=_READ_ONLY_FIX,
            )


_SETTING_HINT = re.compile(
    r"(Possible solutions:|[^.:]*\b(?:SET|PRAGMA|RESET)\s+[a-z_]+).*$", re.DOTALL
)


def _without_setting_hints(text: str) -> str:
    """DuckDB's message less its advice to change a setting (``SET memory_limit``, ``SET
    threads``): the sandbox locks the configuration, so a query cannot follow it; the caller's
    fix names the setting that does apply."""
    return _SETTING_HINT.sub("", text).rstrip(" .;:(") or text


def _request_parts(root: Root) -> tuple[list[str], str]:
    """The view statements and the one readable directory.

    The views are made for the folder as it is now (``catalog.duckdb`` keeps them for other
    DuckDB clients), so a warehouse root that was moved or copied still queries itself.

    Raises:
        NotMaterializedError: there is no catalog yet.
    """
    store = CatalogStore(root)
    if not store.has_rows():
        raise NotMaterializedError(
            f"no catalog in the warehouse root {root.url}",
            subject=store.url,
            fix=_no_catalog_fix(root),
        )
    return list(store.view_statements()), store.url + "/"


def _no_catalog_fix(root: Root) -> str:
    """A wrong root (nothing built there) and an empty one (a new warehouse) need other fixes."""
    if not root.has_any(("raw", "decoded", "ted")):
        return (
            "nothing was ever built in this root: check --root or EPISODE_WAREHOUSE_ROOT (the "
            "demo's is demo-data/warehouse), or build a partition there, e.g. "
            "'warehouse materialize atari Pong/5'"
        )
    return "materialize a partition's catalog stage, e.g. 'warehouse materialize atari Pong/5'"


def _memory_bytes(limits: QueryLimits) -> int:
    size = parse_size(limits.memory_limit)
    if size is None or size <= 0:
        raise CatalogQueryError(
            f"memory limit {limits.memory_limit!r} is not a size",
            subject="query",
            fix="give a size such as 500MB or 2GB (--memory-limit, EPISODE_WAREHOUSE_SQL_MEMORY)",
        )
    return size


@functools.lru_cache(maxsize=1)
def _warn_unconfined() -> None:
    log.warning(
        "this kernel has no Landlock: user SQL is kept from writing by the statement check "
        "alone (a Linux kernel of 5.13 or later also refuses writes at the system level)"
    )


def _error(answer: Answer, limits: QueryLimits) -> CatalogQueryError:
    if answer.error_kind == "timeout":
        return CatalogQueryError(
            f"the query ran longer than {limits.timeout_s:g} s and was stopped",
            subject="query",
            fix="narrow it (WHERE, LIMIT), or raise the timeout (--timeout, "
            "EPISODE_WAREHOUSE_SQL_TIMEOUT_S)",
        )
    if answer.error_kind == "permission":
        return CatalogQueryError(
            f"{answer.error.removeprefix('Permission Error: ')}: queries may read only the catalog",
            subject="query",
            fix="query the catalog's views (episodes, partitions); files outside it are refused",
        )
    if answer.error_kind in ("memory", "died"):
        what = _without_setting_hints(answer.error) or "out of memory"
        if answer.error_kind == "died":
            what = f"the query process ended without an answer ({answer.error})"
        return CatalogQueryError(
            f"{what}: the query went past its memory bound (limit {limits.memory_limit})",
            subject="query",
            fix="narrow it, or raise the limit (--memory-limit, EPISODE_WAREHOUSE_SQL_MEMORY)",
        )
    return CatalogQueryError(_without_setting_hints(answer.error), subject="query")


def run_query(
    root: Root,
    sql: str,
    params: list | None = None,
    *,
    limits: QueryLimits | None = None,
) -> tuple[list[str], list[tuple]]:
    """Run one read-only query over the catalog of ``root`` (``WarehouseLayout.root``); return
    (column names, rows), at most ``limits.max_rows`` rows.

    The query runs in a sandboxed child process (``catalog/sandbox.py``): it can read the
    catalog and nothing else, its memory is bounded by the operating system, and it is killed
    at the timeout. Where it names a curation column computed by another stage (duplicates,
    a score) that is not current for some partitions, a warning names them
    (:mod:`~episode_warehouse.catalog.freshness`).

    Raises:
        NotMaterializedError: there is no catalog yet.
        CatalogQueryError: the query is not read-only, reads outside the catalog, runs past the
            timeout or memory bound, or DuckDB rejects it (one-line message).
    """
    limits = limits or QueryLimits()
    check_read_only(sql)
    memory_bytes = _memory_bytes(limits)
    root = root.reader()
    views, allowed_dir = _request_parts(root)
    checks = freshness_checks(sql)
    answer = run_in_child(
        sql,
        params or [],
        views=views,
        allowed_dir=allowed_dir,
        files=root.duckdb_files(),
        memory_limit=limits.memory_limit,
        memory_bytes=memory_bytes,
        max_rows=limits.max_rows,
        timeout_s=limits.timeout_s,
        checks=tuple(query for _, query in checks),
    )
    if not answer.writes_confined:
        _warn_unconfined()
    if answer.error_kind is not None:
        raise _error(answer, limits)
    for (column, _), found in zip(checks, answer.checks, strict=True):
        if found:
            log.warning(freshness_warning(column, [row[0] for row in found]))
    return answer.columns, answer.rows
