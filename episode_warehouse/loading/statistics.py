"""Normalization statistics of exactly the selected steps, from mergeable per-episode partials.

For each key and feature dimension (a vector's entries; an image's channels; a scalar's one) an
episode's *partial* is its step count, mean and sum of squared deviations (Chan's parallel
merge: exact), minimum and maximum (exact), and a histogram of ``BINS`` bins over the episode's
own range. Merging is exact for everything but the histograms, which are spread onto the merged
range: the q01/q99 read from them are the empirical distribution's quantiles (its inverse CDF,
numpy's ``method="inverted_cdf"``) within two bin widths (0.8 %) of the range.

``selection_stats(selection, keys)`` merges the partials of the selected episodes: read from the
``statistics`` rows the statistics asset keeps in the catalog when every selected partition has
them for its current TED (a query, no pass over the data), else computed in one streaming pass
over the selected steps, one episode at a time (never a copy of the selection in memory). A row
that is a part of its episode (openpi's non-idle steps) never takes the episode's stored
partial: its steps are counted by the pass, exactly.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa

from episode_warehouse.errors import ConfigError
from episode_warehouse.ted.statistics import (
    Partials,
    _read,
    _ted_key,
    key_name,
    merge,
    numeric_keys,
    partial_of,
    partials_from_table,
    summary,
)
from episode_warehouse.threads import compute_threads

log = logging.getLogger(__name__)


def selection_stats(selection, keys: list, *, use_catalog: bool = True) -> dict:
    """mean, std, min, max, q01, q99 per feature dimension of ``keys`` over exactly the
    selected steps (and ``count``, the values each is over).

    Args:
        selection: the episodes.
        keys: TED keys (``"action"``, ``("observation", "state")``).
        use_catalog: read the partials the statistics asset keeps when they are current
            (else, or with False, one pass over the data).

    Raises:
        ConfigError: a key the TEDs do not have.
    """
    whole = _whole_episodes(selection) if use_catalog else None
    stored = _stored_partials(selection, keys, whole) if whole is not None else None
    # without stored partials every row is counted by the pass; with them, parts of episodes
    if stored is not None and whole is not None:
        parts = np.flatnonzero(~whole)
    else:
        parts = np.arange(len(selection))
    result = {}
    for key in keys:
        if stored is not None:  # whole episodes from the catalog, parts of episodes by a pass
            tables = [table[key_name(key)].take(rows) for table, rows in stored]
            partials = Partials.concat([*tables, *_one_pass(selection, key, parts)])
        else:
            partials = Partials.concat(list(_one_pass(selection, key, parts)))
        result[key] = summary(merge(partials))
    return result


def _one_pass(selection, key, rows: np.ndarray):
    """The partials of ``key`` of the selection's ``rows`` (each exactly its steps), in order.
    Episodes are counted on one thread per core (the counting releases the GIL; like torch's
    intra-op threads, this is parallelism inside one call, not a second worker pool)."""
    from episode_warehouse.loading.ted_cache import TedCache

    if not len(rows):
        return
    cache = TedCache(selection)
    for source, partition in selection.partitions:
        td = cache.get(source, partition)
        if _ted_key(key) not in set(td.keys(True, True)):
            raise ConfigError(
                f"the TED of {source}:{partition} has no key {key!r}",
                subject="selection_stats",
                fix="use one of " + ", ".join(sorted(map(key_name, numeric_keys(td)))),
            )

    def one(i: int) -> Partials:
        td = cache.get(selection.source[i], selection.partition[i])
        return partial_of(_read(td, key, int(selection.start[i]), int(selection.length[i])))

    with ThreadPoolExecutor(max_workers=compute_threads()) as pool:
        yield from pool.map(one, rows.tolist())


def _whole_episodes(selection) -> np.ndarray:
    """Which selection rows are whole episodes (their steps are the episode's, as the TED's
    episodes table says): only those may take an episode's stored partial. A part of an
    episode (openpi's non-idle steps) is counted by a pass over exactly its steps."""
    from episode_warehouse.ted.reader import TedReader

    whole = np.zeros(len(selection), dtype=bool)
    root = selection.reader_root()
    source, partition = np.array(selection.source), np.array(selection.partition)
    for s, p in selection.partitions:
        table = TedReader.of(root, s, p).episodes()
        starts = table.column("start").to_numpy()
        lengths = table.column("length").to_numpy()
        mine = np.flatnonzero((source == s) & (partition == p))
        episode = selection.episode[mine]  # checked to exist when the selection was made
        whole[mine] = (selection.start[mine] == starts[episode]) & (
            selection.length[mine] == lengths[episode]
        )
    return whole


def _stored_partials(selection, keys, whole: np.ndarray) -> list | None:
    """Per selected partition: ({key: Partials of its episodes}, the rows in them of the
    selected whole episodes, in selection order); None when a partition has no current
    statistics."""
    from episode_warehouse.catalog.statistics import read_partition_statistics

    out = []
    episode = np.asarray(selection.episode)
    pairs = np.array(
        [f"{s}\0{p}" for s, p in zip(selection.source, selection.partition, strict=True)]
    )
    for source, partition in selection.partitions:
        table = read_partition_statistics(selection.root, source, partition)
        if table is None:
            log.info("no current statistics for %s:%s: one pass over the data", source, partition)
            return None
        by_key = {}
        names = table.column("key").to_numpy(zero_copy_only=False)
        for key in keys:
            rows = table.filter(pa.array(names == key_name(key)))
            if not rows.num_rows:
                return None
            by_key[key_name(key)] = partials_from_table(rows)  # rows in episode order
        mine = episode[(pairs == f"{source}\0{partition}") & whole]
        out.append((by_key, mine))
    return out
