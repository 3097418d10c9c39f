"""A partition's overview: length and return histograms, and per-dimension action statistics
(from the catalog's statistics of the partition's current TED)."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa

from episode_warehouse.viewer.partition import PartitionTed

HISTOGRAM_BINS = 20


def histogram(values: np.ndarray, bins: int = HISTOGRAM_BINS) -> dict | None:
    """``edges`` (bins + 1) and ``counts`` of the finite values; None when there are none."""
    finite = values[np.isfinite(values)].astype(np.float64)
    if not finite.size:
        return None
    lo, hi = float(finite.min()), float(finite.max())
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    counts, edges = np.histogram(finite, bins=bins, range=(lo, hi))
    return {"edges": edges.tolist(), "counts": counts.tolist()}


def action_statistics(statistics: pa.Table | None, names: list[str] | None) -> dict | None:
    """mean, std, min, max, q01, q99 of each action dimension, from a partition's statistics
    rows (None when the partition has none for its current TED). A nested action (RLDS's
    ``action/world_vector``, ``action/open_gripper``, ...) gives the dimensions of each of its
    leaves in key order, named ``<leaf>[i]``."""
    from episode_warehouse.ted.statistics import merge, partials_from_table, summary

    if statistics is None:
        return None
    keys = statistics.column("key").to_numpy(zero_copy_only=False)
    leaves = sorted({str(k) for k in keys if k == "action" or str(k).startswith("action/")})
    if not leaves:
        return None
    columns = ("mean", "std", "min", "max", "q01", "q99")
    labels, rows, steps = [], [], 0
    for key in leaves:
        stats = summary(merge(partials_from_table(statistics.filter(pa.array(keys == key)))))
        dims = len(stats["mean"])
        label = key.removeprefix("action/")
        if key == "action" and names is not None and len(names) == dims:
            labels += names
        else:
            labels += [label] if dims == 1 else [f"{label}[{i}]" for i in range(dims)]
        rows += [[_finite(stats[c][j]) for c in columns] for j in range(dims)]
        steps = stats["count"]
    return {"names": labels, "columns": list(columns), "rows": rows, "steps": steps}


def _finite(value) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None


def overview(ted: PartitionTed, statistics: pa.Table | None) -> dict:
    """Everything the partition page draws, as JSON-ready values."""
    lengths = ted.column("length")
    returns = ted.column("return")
    names = (ted.record.extra.get("feature_names") or {}).get("action")
    return {
        "source": ted.source,
        "partition": ted.partition,
        "episodes": len(ted.episodes),
        "steps": ted.record.rows,
        "fps": ted.record.fps,
        "tasks": list(ted.record.tasks)[:50],
        "length": histogram(lengths) if lengths is not None else None,
        "return": histogram(returns) if returns is not None else None,
        "action": action_statistics(statistics, names if isinstance(names, list) else None),
    }
