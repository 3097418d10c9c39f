"""Mergeable per-episode statistics of TED keys (the math under ``selection_stats``).

For each key and feature dimension (a vector's entries; an image's channels; a scalar's one) an
episode's *partial* is its step count, mean and sum of squared deviations (Chan's parallel
merge: exact), minimum and maximum (exact), and a histogram of ``BINS`` bins over the episode's
own range. Merging is exact for everything but the histograms, which are spread onto the merged
range: the q01/q99 read from them are the empirical distribution's quantiles (its inverse CDF,
numpy's ``method="inverted_cdf"``) within two bin widths (0.8 %) of the range. The catalog's
statistics asset stores partials per partition; the data plane merges them per selection.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import torch

from episode_warehouse.threads import compute_threads

log = logging.getLogger(__name__)
BINS = 256
QUANTILES = {"q01": 0.01, "q99": 0.99}


@dataclass
class Partials:
    """Mergeable statistics of one key for E groups of steps (episodes), D feature dims."""

    count: np.ndarray  # (E,) values per dimension (steps x pixels for images)
    mean: np.ndarray  # (E, D)
    m2: np.ndarray  # (E, D) sum of squared deviations from the mean
    min: np.ndarray  # (E, D)
    max: np.ndarray  # (E, D)
    hist: np.ndarray  # (E, D, BINS) counts over [min, max] of each row

    @staticmethod
    def concat(parts: list[Partials]) -> Partials:
        return Partials(
            *(np.concatenate([getattr(p, f) for p in parts]) for f in Partials.__dataclass_fields__)
        )

    def take(self, rows: np.ndarray) -> Partials:
        return Partials(*(getattr(self, f)[rows] for f in Partials.__dataclass_fields__))


def feature_view(values: np.ndarray) -> np.ndarray:
    """Steps x features, as (N, D, k): vectors (N, D) -> D features; images (N, C, H, W) -> C
    channels, (N, H, W) -> one; scalars (N,) and (N, 1) -> one."""
    n = values.shape[0]
    if values.ndim == 1:
        return values.reshape(n, 1, 1)
    if values.ndim == 2:
        return values.reshape(n, values.shape[1], 1)
    if values.ndim == 3:  # one-channel images (N, H, W)
        return values.reshape(n, 1, -1)
    return values.reshape(n, values.shape[1], -1)  # (N, C, ...) channels first


def _partial_of_bytes(x: np.ndarray) -> Partials:
    """uint8 values (images): exact moments from per-channel counts of the 256 values."""
    n, d, k = x.shape
    # torch counts bytes in place (numpy's bincount first widens them to int64: ~20x slower)
    counts = np.stack(
        [
            torch.bincount(
                torch.from_numpy(np.ascontiguousarray(x[:, j]).reshape(-1)), minlength=256
            ).numpy()
            for j in range(d)
        ]
    )
    values = np.arange(256, dtype=np.float64)
    total = n * k
    mean = counts @ values / total
    m2 = (counts * (values[None, :] - mean[:, None]) ** 2).sum(axis=1)
    present = counts > 0
    lo = np.argmax(present, axis=1).astype(np.float64)
    hi = (255 - np.argmax(present[:, ::-1], axis=1)).astype(np.float64)
    width = np.where(hi > lo, hi - lo, 1.0)
    bins = np.clip(
        ((values[None, :] - lo[:, None]) / width[:, None] * BINS).astype(np.int64), 0, BINS - 1
    )
    hist = np.zeros((d, BINS))
    for j in range(d):
        np.add.at(hist[j], bins[j], counts[j])
    return Partials(np.array([total]), mean[None], m2[None], lo[None], hi[None], hist[None])


def partial_of(values: np.ndarray) -> Partials:
    """The partial (E = 1) of one episode's values of a key (N steps)."""
    x = feature_view(np.asarray(values))
    if x.dtype == np.uint8:
        return _partial_of_bytes(x)
    n, d, k = x.shape
    flat = x.transpose(1, 0, 2).reshape(d, n * k).astype(np.float64)
    mean = flat.mean(axis=1)
    m2 = ((flat - mean[:, None]) ** 2).sum(axis=1)
    lo, hi = flat.min(axis=1), flat.max(axis=1)
    width = np.where(hi > lo, hi - lo, 1.0)
    bins = np.clip(((flat - lo[:, None]) / width[:, None] * BINS).astype(np.int64), 0, BINS - 1)
    hist = np.stack([np.bincount(bins[j], minlength=BINS) for j in range(d)]).astype(np.float64)
    return Partials(np.array([n * k]), mean[None], m2[None], lo[None], hi[None], hist[None])


def _spread(p: Partials, glo: np.ndarray, ghi: np.ndarray) -> np.ndarray:
    """Every row's histogram over its [min, max], as mass over BINS bins of [glo, ghi] per
    dimension: each source bin's mass spread uniformly over what it covers (vectorized)."""
    e, d, _ = p.hist.shape
    cdf = np.concatenate([np.zeros((e, d, 1)), np.cumsum(p.hist, axis=2)], axis=2)
    total = cdf[:, :, -1:]
    gwidth = np.where(ghi > glo, ghi - glo, 1.0)
    edges = glo[None, :, None] + gwidth[None, :, None] * np.arange(BINS + 1) / BINS
    width = p.max - p.min
    constant = width <= 0
    u = (edges - p.min[:, :, None]) / np.where(constant, 1.0, width)[:, :, None] * BINS
    u = np.clip(u, 0, BINS)
    i = np.minimum(np.floor(u).astype(np.int64), BINS - 1)
    at = np.take_along_axis(cdf, i, axis=2) + (u - i) * np.take_along_axis(p.hist, i, axis=2)
    at = np.where(constant[:, :, None], np.where(edges > p.min[:, :, None], total, 0.0), at)
    at[:, :, -1] = total[:, :, 0]  # the merged range ends at the largest maximum
    return np.diff(at, axis=2).sum(axis=0)


def merge(p: Partials) -> Partials:
    """One partial (E = 1) of all the rows of ``p``."""
    counts = p.count.astype(np.float64)
    total = counts.sum()
    mean = (counts[:, None] * p.mean).sum(axis=0) / total
    m2 = p.m2.sum(axis=0) + (counts[:, None] * (p.mean - mean[None, :]) ** 2).sum(axis=0)
    lo, hi = p.min.min(axis=0), p.max.max(axis=0)
    hist = _spread(p, lo, hi)
    return Partials(np.array([int(total)]), mean[None], m2[None], lo[None], hi[None], hist[None])


def _quantile(hist: np.ndarray, lo: float, hi: float, q: float) -> float:
    cdf = np.cumsum(hist)
    target = q * cdf[-1]
    b = min(int(np.searchsorted(cdf, target)), BINS - 1)
    before = cdf[b - 1] if b else 0.0
    inside = (target - before) / hist[b] if hist[b] else 0.5
    return float(lo + (hi - lo) * (b + inside) / BINS)


def summary(p: Partials) -> dict:
    """mean, std (population), min, max, q01, q99 per feature dimension of a merged partial."""
    count = int(p.count[0])
    out: dict = {
        "mean": p.mean[0],
        "std": np.sqrt(p.m2[0] / max(count, 1)),
        "min": p.min[0],
        "max": p.max[0],
    }
    for name, q in QUANTILES.items():
        out[name] = np.array(
            [_quantile(p.hist[0, j], p.min[0, j], p.max[0, j], q) for j in range(p.mean.shape[1])]
        )
    out["count"] = count
    return out


# -- partials as rows (the catalog's statistics table) ----------------------------------------

STATS_SCHEMA = pa.schema(
    [
        pa.field("episode", pa.int64()),
        pa.field("key", pa.string()),
        pa.field("count", pa.int64()),
        pa.field("mean", pa.list_(pa.float64())),
        pa.field("m2", pa.list_(pa.float64())),
        pa.field("min", pa.list_(pa.float64())),
        pa.field("max", pa.list_(pa.float64())),
        pa.field("hist", pa.list_(pa.float32())),  # D x BINS, row-major
    ]
)


def key_name(key) -> str:
    return key if isinstance(key, str) else "/".join(key)


def _ted_key(key):
    return key if isinstance(key, str) else tuple(key)


def _read(td, key, start: int, length: int) -> np.ndarray:
    values = td.get(_ted_key(key))[start : start + length]
    return values.numpy() if isinstance(values, torch.Tensor) else np.asarray(values)


def numeric_keys(td) -> list:
    """The TED keys statistics are kept for: every non-boolean per-step leaf except the
    episode bookkeeping (``episode``, ``task_index``) and the shifted next observations."""
    from episode_warehouse.ted.next_view import NextObservation

    skip = {("episode",), ("task_index",)}
    out = []
    for key in td.keys(True, True):
        parts = (key,) if isinstance(key, str) else tuple(key)
        leaf = td.get(key)
        if parts in skip or leaf.dtype == torch.bool or isinstance(leaf, NextObservation):
            continue  # ("next", observation) is the observation's frames again
        out.append(parts[0] if len(parts) == 1 else parts)
    return sorted(out, key=key_name)


def partition_partials(td, starts, lengths, keys: list) -> pa.Table:
    """Per-episode partials of ``keys`` of one TED, as rows of :data:`STATS_SCHEMA` (episodes
    counted on one thread per core, as in the full pass)."""

    def one(span) -> list[Partials]:
        start, length = span
        return [partial_of(_read(td, key, int(start), int(length))) for key in keys]

    rows: dict[str, list] = {f.name: [] for f in STATS_SCHEMA}
    with ThreadPoolExecutor(max_workers=compute_threads()) as pool:
        spans = zip(starts, lengths, strict=True)
        for episode, partials in enumerate(pool.map(one, spans)):
            for key, p in zip(keys, partials, strict=True):
                rows["episode"].append(episode)
                rows["key"].append(key_name(key))
                rows["count"].append(int(p.count[0]))
                for name in ("mean", "m2", "min", "max"):
                    rows[name].append(getattr(p, name)[0].tolist())
                rows["hist"].append(p.hist[0].reshape(-1).astype(np.float32))
    return pa.table(rows, schema=STATS_SCHEMA)


def partials_from_table(table: pa.Table) -> Partials:
    """The rows of one key (all with the same dimensions) as :class:`Partials`."""
    e = table.num_rows

    def matrix(name: str, dtype=np.float64) -> np.ndarray:
        flat = table.column(name).combine_chunks().flatten().to_numpy(zero_copy_only=False)
        return flat.astype(dtype).reshape(e, -1)

    mean = matrix("mean")
    d = mean.shape[1]
    return Partials(
        table.column("count").to_numpy(),
        mean,
        matrix("m2"),
        matrix("min"),
        matrix("max"),
        matrix("hist").reshape(e, d, BINS),
    )
