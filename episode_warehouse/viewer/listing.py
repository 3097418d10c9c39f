"""Partitions and episodes from the episode catalog, through the same SQL sandbox as
``warehouse sql``: the viewer's filter is a ``WHERE`` clause the user writes, run read-only."""

from __future__ import annotations

import math
import shlex

from episode_warehouse.catalog.query import QueryLimits, run_query
from episode_warehouse.errors import CatalogQueryError
from episode_warehouse.paths import WarehouseLayout

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
)
SORTS = ("episode", "length", "return", "idle_fraction", "jerk", "length_z", "return_z")
LIST_LIMIT = 500  # episodes listed at once; the page says when there are more
LIMITS = QueryLimits(timeout_s=30, memory_limit="1GB")


def _rows(columns: list[str], rows: list[tuple]) -> list[dict]:
    return [
        {
            c: (None if isinstance(v, float) and not math.isfinite(v) else v)
            for c, v in zip(columns, row, strict=True)
        }
        for row in rows
    ]


def partitions(layout: WarehouseLayout) -> list[dict]:
    """Each catalogued partition: episodes, steps, mean return, mean idle fraction."""
    columns, rows = run_query(
        layout.root,
        "SELECT source, partition, count(*) AS episodes, sum(length) AS steps, "
        "avg(return) AS mean_return, avg(idle_fraction) AS mean_idle_fraction "
        "FROM episodes GROUP BY source, partition ORDER BY source, partition",
        limits=LIMITS,
    )
    return _rows(columns, rows)


def _where(where: str) -> str:
    where = where.strip()
    return f"WHERE ({where}\n)" if where else ""  # a trailing -- comment cannot eat the ")"


def episodes_sql(where: str, sort: str = "episode", descending: bool = False) -> str:
    """The listing's query: the episodes that ``where`` selects, ordered by ``sort``."""
    if sort not in SORTS:
        raise CatalogQueryError(
            f"cannot sort by {sort!r}", subject="sort", fix=f"sort by one of {', '.join(SORTS)}"
        )
    direction = "DESC" if descending else "ASC"
    return (
        f"SELECT {', '.join(EPISODE_COLUMNS)} FROM episodes {_where(where)} "
        f"ORDER BY {sort} {direction} NULLS LAST, source, partition, episode"
    )


def selection_sql(where: str) -> str:
    """The query ``warehouse export`` takes for the episodes ``where`` selects."""
    return f"SELECT source, partition, episode, start, length FROM episodes {_where(where)}"


def export_command(where: str, root: str) -> str:
    """The ``warehouse export`` command line that saves the filter ``where`` as a named
    selection, each argument quoted for a POSIX shell: pasted, it passes the query and the
    root byte for byte (a ``$(...)``, a backtick or a ``$`` in the filter is text, never run)."""
    return shlex.join(["./warehouse", "export", "NAME", selection_sql(where), "--root", root])


def episodes(
    layout: WarehouseLayout, where: str = "", sort: str = "episode", descending: bool = False
) -> dict:
    """The listed episodes (at most :data:`LIST_LIMIT`), whether there were more, and the
    ``warehouse export`` query and command line that save this filter as a named selection."""
    limits = QueryLimits(LIMITS.timeout_s, LIMITS.memory_limit, max_rows=LIST_LIMIT + 1)
    columns, rows = run_query(layout.root, episodes_sql(where, sort, descending), limits=limits)
    return {
        "columns": columns,
        "rows": _rows(columns, rows[:LIST_LIMIT]),
        "more": len(rows) > LIST_LIMIT,
        "selection_sql": selection_sql(where),
        "export_command": export_command(where, layout.url),
    }
