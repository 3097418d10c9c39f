"""A selection of episodes: rows (source, partition, episode, start, length) of the catalog."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from episode_warehouse.catalog import run_query
from episode_warehouse.errors import CatalogQueryError, NotMaterializedError
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.ted.layout import META

REQUIRED = ("source", "partition", "episode", "start", "length")


@dataclass(frozen=True)
class Selection:
    """Episodes to train on, in catalog order; everything a loader needs to read them."""

    root: Path
    source: tuple[str, ...]
    partition: tuple[str, ...]
    episode: np.ndarray
    start: np.ndarray
    length: np.ndarray

    def __len__(self) -> int:
        return len(self.episode)

    @property
    def partitions(self) -> list[tuple[str, str]]:
        return sorted(set(zip(self.source, self.partition, strict=True)))

    @classmethod
    def from_rows(cls, rows: list[tuple], root: str | os.PathLike | None = None) -> Selection:
        """From rows whose first five fields are source, partition, episode, start, length.

        Raises:
            NotMaterializedError: a row names a partition without a TED (lists them all).
        """
        layout = WarehouseLayout.from_root(root)
        partitions = {(r[0], r[1]) for r in rows}  # one file check per partition, not per row
        missing = sorted(p for p in partitions if not (layout.ted_dir(*p) / META).is_file())
        if missing:
            raise NotMaterializedError(
                f"no TED for {', '.join(f'{s}:{p}' for s, p in missing[:5])}"
                + (f" and {len(missing) - 5} more" if len(missing) > 5 else ""),
                subject="selection",
                fix="materialize those partitions (warehouse materialize SOURCE PARTITION) or "
                "drop them from the query",
            )
        return cls(
            layout.root,
            tuple(r[0] for r in rows),
            tuple(r[1] for r in rows),
            np.array([r[2] for r in rows], dtype=np.int64),
            np.array([r[3] for r in rows], dtype=np.int64),
            np.array([r[4] for r in rows], dtype=np.int64),
        )


def select_episodes(
    sql: str, root: str | os.PathLike | None = None, params: list | None = None
) -> Selection:
    """Run ``sql`` over the catalog; its rows must start with source, partition, episode,
    start, length (``SELECT source, partition, episode, start, length FROM episodes WHERE ...``).

    Raises:
        CatalogQueryError: the query is not read-only, fails, or lacks the columns.
        NotMaterializedError: it names partitions that have no TED.
    """
    layout = WarehouseLayout.from_root(root)
    columns, rows = run_query(layout.catalog_dir, sql, params)
    if tuple(columns[:5]) != REQUIRED:
        raise CatalogQueryError(
            f"the query returns {columns[:5]}, a selection needs {list(REQUIRED)} first",
            subject="query",
            fix="SELECT source, partition, episode, start, length FROM episodes",
        )
    if not rows:
        raise CatalogQueryError(
            "the query selects no episode", subject="query", fix="loosen the WHERE clause"
        )
    return Selection.from_rows(rows, layout.root)
