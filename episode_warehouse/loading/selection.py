"""A selection of episodes: rows (source, partition, episode, start, length[, weight]) of the
catalog, checked against the TEDs, and pinnable as a JSON manifest.

A query may return a sixth column ``weight`` (per episode; a per-dataset mixture is
``weight / count(*) OVER (PARTITION BY partition)``), which weighted streams and replay buffers
sample by. ``Selection.save(path)`` writes the query, its parameters, the rows and each
partition's TED version (the incremental rule's fingerprint); ``Selection.load(path)`` gives the
same selection back, or a :class:`StaleSelectionError` naming the partitions rebuilt since.

**A selection is pinned to the TED versions it was made on** (:attr:`Selection.versions`): its
rows are offsets into those versions, and the loaders read those versions only. A partition
rebuilt since is met at the first read of it in an epoch; then the loaders raise
:class:`StaleSelectionError` naming it (``on_rebuild="raise"``, the default), or, where the user
asked for it (``on_rebuild="refresh"``), re-resolve its rows in the new version: each row is the
same steps of the same episode (its offset within the episode and its length), refused if the
episode no longer holds them. Within an epoch a partition is read from the version the epoch
began on (a bucket keeps a replaced version readable for a day; a folder's is gone once
replaced, and a reader that must open it again says so).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from episode_warehouse.atomic import read_json, write_user_json
from episode_warehouse.catalog import run_query
from episode_warehouse.errors import (
    CatalogQueryError,
    ConfigError,
    NotMaterializedError,
    StaleSelectionError,
)
from episode_warehouse.paths import WarehouseLayout, artifact_name
from episode_warehouse.storage import Root, parse_root
from episode_warehouse.ted.reader import TedReader

REQUIRED = ("source", "partition", "episode", "start", "length")
WEIGHT = "weight"
MANIFEST_FORMAT = "episode-warehouse-selection"
ON_REBUILD = ("raise", "refresh")  # what a loader does with a partition rebuilt since


@dataclass(frozen=True, eq=False)
class Selection:
    """Episodes to train on, in catalog order; everything a loader needs to read them."""

    root: str  # the root's URL: a local root's folder, or a bucket root's gs:// URL
    source: tuple[str, ...]
    partition: tuple[str, ...]
    episode: np.ndarray
    start: np.ndarray
    length: np.ndarray
    weight: np.ndarray | None = None
    query: str | None = None
    params: tuple = field(default_factory=tuple)
    # what a loader does with a partition rebuilt since the selection was made (module docs)
    on_rebuild: str = "raise"
    # "source:partition" -> the TED record the rows were checked against (the pin)
    records: dict[str, dict] = field(default_factory=dict, repr=False)
    # each row's first step within its episode (start - the episode's start in the pinned TED)
    offsets: np.ndarray | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.episode)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Selection):
            return NotImplemented
        same_weight = (self.weight is None and other.weight is None) or (
            self.weight is not None
            and other.weight is not None
            and np.array_equal(self.weight, other.weight)
        )
        return (
            self.root == other.root
            and self.rows() == other.rows()
            and same_weight
            and (self.query, tuple(self.params)) == (other.query, tuple(other.params))
        )

    __hash__ = None  # type: ignore[assignment]

    @property
    def partitions(self) -> list[tuple[str, str]]:
        return sorted(set(zip(self.source, self.partition, strict=True)))

    def rows(self) -> list[tuple[str, str, int, int, int]]:
        """(source, partition, episode, start, length) per selected episode."""
        return [
            (s, p, int(e), int(a), int(n))
            for s, p, e, a, n in zip(
                self.source, self.partition, self.episode, self.start, self.length, strict=True
            )
        ]

    @property
    def versions(self) -> dict[str, str]:
        """``"source:partition"`` -> the TED version the rows were checked against (the pin)."""
        return {key: record.get("version") or "" for key, record in self.records.items()}

    def rows_of(self, source: str, partition: str) -> np.ndarray:
        """The selection rows of one partition."""
        return np.flatnonzero(
            (np.asarray(self.source) == source) & (np.asarray(self.partition) == partition)
        )

    def resolve(self, source: str, partition: str, episodes) -> np.ndarray:
        """The starts of ``source``/``partition``'s rows in a rebuilt TED whose episodes table
        is ``episodes``: each row is the same steps (its offset and length) of the same episode.

        Raises:
            StaleSelectionError: an episode the new version lacks, or too short for its row
                (naming the row and the fix).
        """
        mine = self.rows_of(source, partition)
        ids = episodes.column("episode").to_numpy()
        starts = episodes.column("start").to_numpy()
        lengths = episodes.column("length").to_numpy()
        where = np.searchsorted(ids, self.episode[mine])
        at = np.minimum(where, max(len(ids) - 1, 0))
        offsets = self.offsets[mine] if self.offsets is not None else np.zeros(len(mine), np.int64)
        known = (where < len(ids)) & (ids[at] == self.episode[mine]) if len(ids) else where < 0
        fits = known & (offsets + self.length[mine] <= np.where(known, lengths[at], 0))
        if not fits.all():
            bad = int(mine[int(np.argmin(fits))])
            raise StaleSelectionError(
                f"{source}:{partition} was rebuilt and its episode {self.episode[bad]} no longer "
                f"holds selection row {bad} (steps {int(offsets[np.argmin(fits)])} to "
                f"{int(offsets[np.argmin(fits)] + self.length[bad])} of it); "
                f"{int((~fits).sum())} such rows",
                subject="selection",
                fix="select the episodes again (select_episodes) from the current catalog",
            )
        return starts[at] + offsets

    def is_pinned(self, source: str, partition: str, record: dict) -> bool:
        """Whether ``record`` is the TED version the selection is pinned to."""
        return same_version(self.records.get(f"{source}:{partition}", {}), record)

    def stale(self, source: str, partition: str, what: str) -> StaleSelectionError:
        """The error of reading ``source``/``partition`` in another version than the pin."""
        return StaleSelectionError(
            f"the TED of {source}:{partition} {what}: the selection's rows are offsets into "
            f"the version it was made on ({self.versions.get(f'{source}:{partition}')})",
            subject="selection",
            fix="select the episodes again (select_episodes), or make the selection with "
            'on_rebuild="refresh" to re-resolve its rows in each rebuilt partition',
        )

    def starts_in(self, source: str, partition: str, record: dict, episodes) -> np.ndarray:
        """The starts of ``source``/``partition``'s rows in the TED version ``record`` (whose
        episodes table ``episodes()`` gives): the selection's own in the pinned version; in
        another, re-resolved (:meth:`resolve`) where the selection asks for it.

        Raises:
            StaleSelectionError: another version, and the selection does not ask for a
                refresh (or its rows no longer fit).
        """
        rows = self.rows_of(source, partition)
        if self.is_pinned(source, partition, record):
            return self.start[rows]
        if not record:
            raise self.stale(source, partition, "was dropped since the selection was made")
        if self.on_rebuild != "refresh":
            raise self.stale(source, partition, "was rebuilt since the selection was made")
        return self.resolve(source, partition, episodes())

    def refreshed(self) -> Selection:
        """This selection re-resolved against the current TEDs of its partitions (each row the
        same steps of the same episode, :meth:`resolve`), pinned to them.

        Raises:
            StaleSelectionError: a row the rebuilt TED no longer holds.
        """
        root = self.reader_root()
        start, records = self.start.copy(), dict(self.records)
        for source, partition in self.partitions:
            reader = TedReader.of(root, source, partition)
            key = f"{source}:{partition}"
            if reader.record.get("version") != self.versions.get(key):
                start[self.rows_of(source, partition)] = self.resolve(
                    source, partition, reader.episodes()
                )
                records[key] = reader.record
        return replace(self, start=start, records=records)

    def reader_root(self) -> Root:
        """The root the episodes are read from, opened for reading (it writes nothing)."""
        return parse_root(self.root)

    def ted_versions(self) -> dict[str, str]:
        """``"source:partition"`` -> the version of each partition's TED published now."""
        root = self.reader_root()
        return {
            f"{s}:{p}": root.artifact(artifact_name("ted", s, p)).read()[0].get("version") or ""
            for s, p in self.partitions
        }

    @classmethod
    def from_rows(
        cls,
        rows: list[tuple],
        root: str | os.PathLike | WarehouseLayout | Root | None = None,
        *,
        query: str | None = None,
        params: list | tuple | None = None,
        weighted: bool | None = None,
        on_rebuild: str = "raise",
    ) -> Selection:
        """From rows whose first five fields are source, partition, episode, start, length,
        and, with ``weighted`` (default: when the rows have a sixth field), a weight; pinned to
        the TED versions they are checked against (``on_rebuild``: see the module).

        Every row is matched against its partition's TED: the episode must exist there and
        the rows ``[start, start + length)`` must lie inside it, so a query cannot read past an
        episode's end or into another episode (``length + 40``, ``-30 AS start``). A row may
        be a part of its episode: the steps openpi's idle filter keeps, say (``start + r[1]``,
        ``r[2] - r[1]`` over ``UNNEST(nonidle_ranges)``). ``root``: the warehouse root's
        setting (see :meth:`WarehouseLayout.from_root`), or its layout.

        Raises:
            NotMaterializedError: a row names a partition without a TED (lists them all).
            CatalogQueryError: a row's steps are not inside its episode (names the row), or
                a weight that is negative, NaN, infinite, or all weights zero.
            ConfigError: ``on_rebuild`` is not one of :data:`ON_REBUILD`.
        """
        if on_rebuild not in ON_REBUILD:
            raise ConfigError(
                f"on_rebuild must be one of {ON_REBUILD}, not {on_rebuild!r}",
                subject="selection",
                fix='on_rebuild="refresh" re-resolves the rows of a rebuilt partition',
            )
        store = parse_root(root.root if isinstance(root, WarehouseLayout) else root)
        partitions = sorted({(r[0], r[1]) for r in rows})  # one check per partition, not per row
        missing = [p for p in partitions if not _has_ted(store, *p)]
        if missing:
            raise NotMaterializedError(
                f"no TED for {', '.join(f'{s}:{p}' for s, p in missing[:5])}"
                + (f" and {len(missing) - 5} more" if len(missing) > 5 else ""),
                subject="selection",
                fix="materialize those partitions (warehouse materialize SOURCE PARTITION) or "
                "drop them from the query",
            )
        weighted = (len(rows[0]) > 5) if weighted is None and rows else bool(weighted)
        weight = _weights([r[5] for r in rows]) if weighted else None
        selection = cls(
            store.url,
            tuple(r[0] for r in rows),
            tuple(r[1] for r in rows),
            np.array([r[2] for r in rows], dtype=np.int64),
            np.array([r[3] for r in rows], dtype=np.int64),
            np.array([r[4] for r in rows], dtype=np.int64),
            weight,
            query,
            tuple(params or ()),
            on_rebuild,
            offsets=np.zeros(len(rows), dtype=np.int64),
        )
        for source, partition in partitions:
            reader = TedReader.of(root=store, source=source, partition=partition)
            selection._check_against_ted(reader.episodes(), source, partition)
            selection.records[f"{source}:{partition}"] = reader.record
        return selection

    def _check_against_ted(self, table, source: str, partition: str) -> None:
        """The rows of ``source``/``partition`` lie inside their episodes of ``table`` (the
        pinned TED's episodes); records each row's offset within its episode."""
        ids = table.column("episode").to_numpy()
        starts = table.column("start").to_numpy()
        lengths = table.column("length").to_numpy()
        mine = np.flatnonzero(
            (np.array(self.source) == source) & (np.array(self.partition) == partition)
        )
        where = np.searchsorted(ids, self.episode[mine])  # episode ids are 0..n-1, sorted
        known = (where < len(ids)) & (ids[np.minimum(where, len(ids) - 1)] == self.episode[mine])
        ok = known.copy()
        first, n = self.start[mine][known], self.length[mine][known]
        ok[known] = (
            (first >= starts[where[known]])
            & (n >= 1)
            & (first + n <= starts[where[known]] + lengths[where[known]])
        )
        if ok.all():
            self.offsets[mine] = self.start[mine] - starts[where]  # type: ignore[index]
            return
        bad = int(np.argmin(ok))
        i = int(mine[bad])
        said = f"episode {self.episode[i]} start {self.start[i]} length {self.length[i]}"
        truth = (
            f"outside the TED's episode (start {starts[where[bad]]} length {lengths[where[bad]]})"
            if known[bad]
            else "but the TED has no such episode"
        )
        raise CatalogQueryError(
            f"row {i} ({source} {partition}) says {said}, {truth}; {int((~ok).sum())} such rows",
            subject="selection",
            fix="select episode, start and length from the episodes view unchanged, or a "
            "range inside the episode (start + a, b - a for 0 <= a < b <= length)",
        )

    def manifest(self) -> dict:
        """The selection as a pinned manifest (what :meth:`save` writes)."""
        return {
            "format": MANIFEST_FORMAT,
            "format_version": 1,
            "root": str(self.root),
            "query": self.query,
            "params": list(self.params),
            "columns": [*REQUIRED, WEIGHT] if self.weight is not None else list(REQUIRED),
            "rows": [
                [*row, float(w)] if self.weight is not None else list(row)
                for row, w in zip(self.rows(), self._weights_or_ones(), strict=True)
            ],
            "teds": self.versions,
        }

    def _weights_or_ones(self) -> np.ndarray:
        return self.weight if self.weight is not None else np.ones(len(self))

    def save(self, path: str | os.PathLike) -> Path:
        """Write the pinned manifest to ``path`` (JSON, atomically; its folder is made); returns
        the path.

        Raises:
            ConfigError: ``path`` is a folder, a link, a pipe or a device (never replaced).
        """
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        return write_user_json(path, self.manifest())

    @classmethod
    def load(
        cls,
        path: str | os.PathLike,
        root: str | os.PathLike | None = None,
        *,
        allow_stale: bool = False,
        on_rebuild: str = "raise",
    ) -> Selection:
        """The selection pinned at ``path``.

        Args:
            path: a manifest written by :meth:`save`.
            root: the warehouse root to read it from (default: the one it was saved from); a
                different root is refused.
            allow_stale: accept partitions whose TED was rebuilt since the manifest was saved
                (their episodes must still match).
            on_rebuild: what loaders do with a partition rebuilt later (the module's docs).

        Raises:
            ConfigError: not a selection manifest, or one of another warehouse root.
            StaleSelectionError: partitions rebuilt since (named), without ``allow_stale``.
        """
        manifest = read_json(Path(path))
        if manifest.get("format") != MANIFEST_FORMAT:
            raise ConfigError(
                "not a selection manifest",
                subject=str(path),
                fix="pass a file Selection.save wrote",
            )
        saved_root = parse_root(manifest["root"])
        if root is not None and parse_root(root).url != saved_root.url:
            raise ConfigError(
                f"the manifest pins a selection of the warehouse at {saved_root.url}",
                subject=str(path),
                fix=f"load it with root={saved_root.url!r}, or select again in this warehouse",
            )
        if not saved_root.exists():
            raise ConfigError(
                "the warehouse root it was saved from does not exist here",
                subject=f"{path} (root {saved_root.url})",
                fix="mount that warehouse at the same path, or select again here",
            )
        rows = [tuple(r) for r in manifest["rows"]]
        selection = cls.from_rows(
            rows,
            saved_root,
            query=manifest.get("query"),
            params=manifest.get("params"),
            weighted=WEIGHT in manifest.get("columns", []),
            on_rebuild=on_rebuild,
        )
        now = selection.ted_versions()
        stale = sorted(k for k, v in manifest["teds"].items() if now.get(k) != v)
        if stale and not allow_stale:
            raise StaleSelectionError(
                f"the TED of {', '.join(stale[:5])}"
                + (f" and {len(stale) - 5} more" if len(stale) > 5 else "")
                + " changed since the selection was pinned",
                subject=str(path),
                fix="train on the current data with Selection.load(..., allow_stale=True), or "
                "restore the pinned versions",
            )
        return selection


def same_version(pin: dict, record: dict) -> bool:
    """Whether two TED records are one version (a TED laid out without the incremental rule
    has no version: the whole records are compared)."""
    if pin.get("version") or record.get("version"):
        return pin.get("version") == record.get("version")
    return pin == record


def _has_ted(root: Root, source: str, partition: str) -> bool:
    return bool(root.artifact(artifact_name("ted", source, partition)).read()[0])


def _weights(values: list) -> np.ndarray:
    """Checked weights: finite, non-negative, not all zero."""
    try:
        weight = np.array(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise CatalogQueryError(
            f"the weight column is not numeric ({exc})", subject="selection"
        ) from None
    bad = ~np.isfinite(weight) | (weight < 0)
    if bad.any():
        i = int(np.argmax(bad))
        raise CatalogQueryError(
            f"row {i} has weight {float(weight[i])!r} ({int(bad.sum())} rows are negative, NaN or "
            "infinite)",
            subject="selection",
            fix="weights must be finite and >= 0 (coalesce NULLs, clamp negatives)",
        )
    if not weight.sum() > 0:
        raise CatalogQueryError(
            "every weight is zero", subject="selection", fix="give some episodes a positive weight"
        )
    return weight


def select_episodes(
    sql: str,
    root: str | os.PathLike | None = None,
    params: list | None = None,
    *,
    on_rebuild: str = "raise",
) -> Selection:
    """Run ``sql`` over the catalog; its rows must start with source, partition, episode,
    start, length (``SELECT source, partition, episode, start, length FROM episodes WHERE ...``),
    optionally followed by ``weight``. The selection is pinned to the TEDs it was checked
    against; ``on_rebuild``: what loaders do with a partition rebuilt later (``"raise"``
    :class:`StaleSelectionError`, or ``"refresh"`` its rows; the module's docs).

    Raises:
        CatalogQueryError: the query is not read-only, fails, lacks the columns, or has bad
            weights.
        NotMaterializedError: it names partitions that have no TED.
    """
    store = parse_root(root)
    columns, rows = run_query(store, sql, params)
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
    weighted = len(columns) > 5 and columns[5] == WEIGHT
    return Selection.from_rows(
        [tuple(r[:6]) if weighted else tuple(r[:5]) for r in rows],
        store,
        query=sql,
        params=params,
        weighted=weighted,
        on_rebuild=on_rebuild,
    )
