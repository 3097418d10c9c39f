"""A selection of episodes: rows (source, partition, episode, start, length) of the catalog."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from episode_warehouse.catalog import run_query
from episode_warehouse.errors import CatalogQueryError, NotMaterializedError
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.ted.layout import EPISODES, META

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

        Every row is matched against its partition's TED: the episode must exist there with
        exactly that start and length, so a query cannot read past an episode's end or into
        another episode (``length + 40``, ``-30 AS start``).

        Raises:
            NotMaterializedError: a row names a partition without a TED (lists them all).
            CatalogQueryError: a row's start or length is not its episode's (names the row).
        """
        layout = WarehouseLayout.from_root(root)
        partitions = sorted({(r[0], r[1]) for r in rows})  # one check per partition, not per row
        missing = [p for p in partitions if not (layout.ted_dir(*p) / META).is_file()]
        if missing:
            raise NotMaterializedError(
                f"no TED for {', '.join(f'{s}:{p}' for s, p in missing[:5])}"
                + (f" and {len(missing) - 5} more" if len(missing) > 5 else ""),
                subject="selection",
                fix="materialize those partitions (warehouse materialize SOURCE PARTITION) or "
                "drop them from the query",
            )
        selection = cls(
            layout.root,
            tuple(r[0] for r in rows),
            tuple(r[1] for r in rows),
            np.array([r[2] for r in rows], dtype=np.int64),
            np.array([r[3] for r in rows], dtype=np.int64),
            np.array([r[4] for r in rows], dtype=np.int64),
        )
        for source, partition in partitions:
            selection._check_against_ted(layout, source, partition)
        return selection

    def _check_against_ted(self, layout: WarehouseLayout, source: str, partition: str) -> None:
        table = pq.read_table(layout.ted_dir(source, partition) / EPISODES)
        ids = table.column("episode").to_numpy()
        starts = table.column("start").to_numpy()
        lengths = table.column("length").to_numpy()
        mine = np.flatnonzero(
            (np.array(self.source) == source) & (np.array(self.partition) == partition)
        )
        where = np.searchsorted(ids, self.episode[mine])  # episode ids are 0..n-1, sorted
        known = (where < len(ids)) & (ids[np.minimum(where, len(ids) - 1)] == self.episode[mine])
        ok = known.copy()
        ok[known] = (starts[where[known]] == self.start[mine][known]) & (
            lengths[where[known]] == self.length[mine][known]
        )
        if ok.all():
            return
        bad = int(np.argmin(ok))
        i = int(mine[bad])
        said = f"episode {self.episode[i]} start {self.start[i]} length {self.length[i]}"
        truth = (
            f"start {starts[where[bad]]} length {lengths[where[bad]]}"
            if known[bad]
            else "no such episode"
        )
        raise CatalogQueryError(
            f"row {i} ({source} {partition}) says {said}, the TED has {truth} "
            f"({int((~ok).sum())} such rows)",
            subject="selection",
            fix="select episode, start and length from the episodes view unchanged",
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
