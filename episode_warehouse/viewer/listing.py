"""Partitions and episodes from the episode catalog, through the same SQL sandbox as
``warehouse sql``: the viewer's filter is a ``WHERE`` clause the user writes, run read-only."""

from __future__ import annotations

import json
import math
import shlex
import threading
from contextlib import contextmanager

import duckdb

from episode_warehouse.catalog.query import QueryLimits, run_query
from episode_warehouse.catalog.store import CatalogStore
from episode_warehouse.errors import BusyError, CatalogQueryError
from episode_warehouse.storage import Root

EPISODE_COLUMNS = (
    "source",
    "partition",
    "episode",
    "length",
    "return",
    "idle_fraction",
    "jerk",
    "length_z",
    "return_z",
    "terminated",
    "truncated",
    "language_instruction",
    "defects",
    "near_duplicate_of",
)
SORTS = ("episode", "length", "return", "idle_fraction", "jerk", "length_z", "return_z", "defects")
LIST_LIMIT = 500  # episodes listed at once; the page says when there are more
LIMITS = QueryLimits(timeout_s=30, memory_limit="1GB")
MAX_FILTER_CHARS = 16 << 10
# heavy requests running at once (a catalog query is a sandboxed child; a Rerun file reads a
# whole episode): a further one is answered "busy" at once, so slow ones cannot take every
# server thread and stall the rest of the API
QUERY_SLOTS = 4
_slots = threading.BoundedSemaphore(QUERY_SLOTS)


@contextmanager
def query_slot():
    """One of the :data:`QUERY_SLOTS`, or :class:`BusyError` at once when none is free."""
    if not _slots.acquire(blocking=False):
        raise BusyError(
            f"{QUERY_SLOTS} catalog queries or Rerun files are being made",
            subject="the viewer",
            fix="wait for them (a filter runs for at most 30 s) and try again",
        )
    try:
        yield
    finally:
        _slots.release()


def _tree(sql: str) -> dict:
    """DuckDB's parse of ``sql`` (``json_serialize_sql``: nothing is run), less the positions."""
    with duckdb.connect() as con:
        row = con.execute("SELECT json_serialize_sql(?::VARCHAR)", [sql]).fetchone()
    tree = json.loads(row[0] if row else "{}")
    if tree.get("error"):
        raise CatalogQueryError(
            f"the filter does not parse: {tree.get('error_message', '')}",
            subject="filter",
            fix="write one SQL expression over the episodes' columns, e.g. length > 20",
        )

    def strip(node):
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if k != "query_location"}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    return strip(tree)


def check_filter(where: str) -> str:
    """``where`` when it is one expression: the listing's query with it parses to the same
    tree as with ``TRUE`` but for its WHERE clause. A ``)`` in the filter closed its wrapper,
    so ``1=1) UNION ALL SELECT ... WHERE (1=1`` returned arbitrary rows.

    Raises:
        CatalogQueryError: a filter that is longer than :data:`MAX_FILTER_CHARS`, does not
            parse, or is more than one expression.
    """
    if len(where) > MAX_FILTER_CHARS:
        raise CatalogQueryError(
            f"a filter of {len(where):,} characters", subject="filter",
            fix=f"write one expression of at most {MAX_FILTER_CHARS:,} characters",
        )  # fmt: skip
    if not where.strip():
        return where

    def shape(tree: dict) -> dict:
        statements = tree.get("statements") or [{}]
        node = dict(statements[0].get("node") or {})
        node.pop("where_clause", None)
        return {"count": len(statements), "node": node}

    given = _tree(episodes_sql(where))
    if given.get("statements") and shape(given) == shape(_tree(episodes_sql("TRUE"))):
        return where
    raise CatalogQueryError(
        "the filter is more than one expression (a ')' closed the WHERE clause)",
        subject="filter",
        fix="write one SQL expression over the episodes' columns, e.g. length > 20",
    )


def _rows(columns: list[str], rows: list[tuple]) -> list[dict]:
    return [
        {
            c: (None if isinstance(v, float) and not math.isfinite(v) else v)
            for c, v in zip(columns, row, strict=True)
        }
        for row in rows
    ]


def partitions(root: Root) -> list[dict]:
    """Each catalogued partition: episodes, steps, mean return, mean idle fraction."""
    with query_slot():
        return _partitions(root)


def _partitions(root: Root) -> list[dict]:
    columns, rows = run_query(
        root,
        "SELECT source, partition, count(*) AS episodes, sum(length) AS steps, "
        "avg(return) AS mean_return, avg(idle_fraction) AS mean_idle_fraction "
        "FROM episodes GROUP BY source, partition ORDER BY source, partition",
        limits=LIMITS,
    )
    return _rows(columns, rows)


def _where(where: str) -> str:
    where = where.strip()
    return f"WHERE ({where}\n)" if where else ""  # a trailing -- comment cannot eat the ")"


def episodes_sql(
    where: str, sort: str = "episode", descending: bool = False, scores: tuple[str, ...] = ()
) -> str:
    """The listing's query: the episodes that ``where`` selects, ordered by ``sort``, with each
    score column of ``scores`` (checked names) and the audit's findings."""
    score_columns = tuple(f"score_{n}" for n in scores)
    if sort not in SORTS + score_columns:
        raise CatalogQueryError(
            f"cannot sort by {sort!r}", subject="sort",
            fix=f"sort by one of {', '.join(SORTS + score_columns)}",
        )  # fmt: skip
    direction = "DESC" if descending else "ASC"
    columns = ", ".join((*EPISODE_COLUMNS, *score_columns, "findings"))
    return (
        f"SELECT {columns} FROM episodes {_where(where)} "
        f"ORDER BY {sort} {direction} NULLS LAST, source, partition, episode"
    )


def _flags(findings: list[dict] | None) -> list[str]:
    """One line per finding of the integrity audit (the list's flag and its tooltip)."""
    return [
        f"{f['kind']} {f['key']} at step {f['step']} ({f['steps']} steps): {f['detail']}".replace(
            "  ", " "
        )
        for f in findings or []
    ]


def selection_sql(where: str) -> str:
    """The query ``warehouse export`` takes for the episodes ``where`` selects."""
    return f"SELECT source, partition, episode, start, length FROM episodes {_where(where)}"


def export_command(where: str, root: str) -> str:
    """The ``warehouse export`` command line that saves the filter ``where`` as a named
    selection, each argument quoted for a POSIX shell: pasted, it passes the query and the
    root byte for byte (a ``$(...)``, a backtick or a ``$`` in the filter is text, never run)."""
    return shlex.join(["./warehouse", "export", "NAME", selection_sql(where), "--root", root])


def episodes(root: Root, where: str = "", sort: str = "episode", descending: bool = False) -> dict:
    """The listed episodes (at most :data:`LIST_LIMIT`), whether there were more, and the
    ``warehouse export`` query and command line that save this filter as a named selection."""
    limits = QueryLimits(LIMITS.timeout_s, LIMITS.memory_limit, max_rows=LIST_LIMIT + 1)
    scores = tuple(CatalogStore(root).score_names())
    sql = episodes_sql(check_filter(where), sort, descending, scores)
    with query_slot():
        columns, rows = run_query(root, sql, limits=limits)
    listed = _rows(columns, rows[:LIST_LIMIT])
    for row in listed:
        row["flags"] = _flags(row.pop("findings"))
    return {
        "columns": [c for c in columns if c != "findings"],
        "sorts": [*SORTS, *(f"score_{n}" for n in scores)],
        "rows": listed,
        "more": len(rows) > LIST_LIMIT,
        "selection_sql": selection_sql(where),
        "export_command": export_command(where, root.url),
    }
