"""Normalization statistics as Octo's ``get_dataset_statistics`` computes them, with OpenVLA's
names beside Octo's, and Octo's ``combine_dataset_statistics`` for a mixture.

Per partition: for ``action`` and ``proprio`` (the state) ``mean``, ``std`` (population, as
numpy's default), ``max``, ``min``, ``p01``/``p99`` (Octo) and the same values as ``q01``/``q99``
(OpenVLA; ``np.quantile``, linear interpolation), and ``mask`` (the dimensions normalization
applies to); ``num_transitions`` and ``num_trajectories``. The file ``dataset_statistics.json``
holds ``{dataset name: statistics}``, the layout OpenVLA's ``predict_action(unnorm_key=...)``
reads from its ``norm_stats``.

Computed in float64 (Octo sums float32 arrays in float32: a dimension alternating 0 and 1e20
overflowed to ``std: inf``); a statistic that is still not finite is refused, naming the key,
the statistic and the dimension, so the file is always strict JSON.
"""

from __future__ import annotations

import logging

import numpy as np

from episode_warehouse.errors import CorruptInputError

log = logging.getLogger(__name__)
STATISTICS_FILE = "dataset_statistics.json"


def _summary(values: np.ndarray) -> dict:
    values = np.asarray(values, dtype=np.float64)
    p01 = np.quantile(values, 0.01, axis=0).tolist()
    p99 = np.quantile(values, 0.99, axis=0).tolist()
    return {
        "mean": values.mean(0).tolist(),
        "std": values.std(0).tolist(),
        "max": values.max(0).tolist(),
        "min": values.min(0).tolist(),
        "p99": p99,
        "p01": p01,
        "q99": p99,
        "q01": p01,
    }


def octo_statistics(
    action: np.ndarray,
    state: np.ndarray | None,
    *,
    episodes: int,
    action_mask: list[bool],
    subject: str = "",
) -> dict:
    """The statistics of one standardized partition (all of its kept steps).

    Raises:
        CorruptInputError: a statistic is not finite (values near float64's range), naming
            ``subject``, the key, the statistic and the dimension.
    """
    out: dict = {"action": {**_summary(action), "mask": list(action_mask)}}
    if state is not None:
        out["proprio"] = {**_summary(state), "mask": [True] * state.shape[1]}
    for key in ("action", "proprio"):
        _require_finite(out.get(key, {}), key, subject)
    out["num_transitions"] = int(len(action))
    out["num_trajectories"] = int(episodes)
    return out


def _require_finite(summary: dict, key: str, subject: str) -> None:
    for name, values in summary.items():
        if name == "mask":
            continue
        bad = [d for d, v in enumerate(values) if not np.isfinite(v)]
        if bad:
            name_ = "state" if key == "proprio" else key
            raise CorruptInputError(
                f"the {key} statistic {name!r} of dimension {bad[0]} is {values[bad[0]]} "
                f"(not finite; dimensions {bad}): its {name_} values are too large to normalize",
                subject=subject,
                fix=f"scale or drop dimension {bad[0]} of the {name_} in the source (or in the "
                "standardized mapping) so its values stay well inside float64's range",
            )


def combine_dataset_statistics(statistics: list[dict]) -> dict:
    """Octo's ``combine_dataset_statistics``: means weighted by transitions, the pooled
    population std, min of mins and max of maxes; ``num_transitions`` and ``num_trajectories``
    are the lists of the parts. A key is combined when every part has it with one size (states
    of 8 and 7 dimensions are not: that key is left out, with a warning).

    Raises:
        ValueError: no statistics.
    """
    if not statistics:
        raise ValueError("no statistics to combine")
    counts = np.array([s["num_transitions"] for s in statistics], dtype=np.float64)
    weights = counts / counts.sum()
    out: dict = {}
    for key in ("action", "proprio"):
        parts = [s[key] for s in statistics if key in s]
        if len(parts) != len(statistics):
            continue  # Octo combines a key only when every dataset has it
        sizes = {len(p["mean"]) for p in parts}
        if len(sizes) > 1:  # Octo's np.array of ragged lists fails here; the key is left out
            log.warning("%s sizes differ across the datasets (%s): not combined", key,
                        sorted(sizes))  # fmt: skip
            continue
        means = np.array([p["mean"] for p in parts], dtype=np.float64)
        stds = np.array([p["std"] for p in parts], dtype=np.float64)
        mean = (means * weights[:, None]).sum(0)
        var = (counts[:, None] * stds**2 + counts[:, None] * (means - mean) ** 2).sum(0)
        out[key] = {
            "min": np.array([p["min"] for p in parts]).min(0).tolist(),
            "max": np.array([p["max"] for p in parts]).max(0).tolist(),
            "mean": mean.tolist(),
            "std": np.sqrt(var / counts.sum()).tolist(),
        }
    out["num_trajectories"] = [s["num_trajectories"] for s in statistics]
    out["num_transitions"] = [s["num_transitions"] for s in statistics]
    return out


def pool_statistics(parts: list[dict], columns: dict[str, list[np.ndarray]]) -> dict:
    """One dataset's statistics from its shard ranges (each standardized alone), in the layout
    of :func:`octo_statistics`: ``mean``, ``std`` (pooled), ``min`` and ``max`` from the
    ranges' statistics; the 1% and 99% quantiles from ``columns`` (``"action"``/``"proprio"``:
    each range's memory-mapped array), one dimension at a time, so memory holds one column of
    the dataset, never a frame. Equal to the statistics of the dataset standardized whole.

    Raises:
        ValueError: no statistics.
    """
    if len(parts) == 1:
        return parts[0]
    combined = combine_dataset_statistics(parts)
    out: dict = {}
    for key in ("action", "proprio"):
        if key not in combined or key not in columns:
            continue
        arrays = columns[key]
        p01, p99 = [], []
        for dim in range(arrays[0].shape[1]):
            column = np.concatenate([np.asarray(a[:, dim], dtype=np.float64) for a in arrays])
            low, high = np.quantile(column, [0.01, 0.99])
            p01.append(float(low))
            p99.append(float(high))
        out[key] = {
            **combined[key], "p99": p99, "p01": p01, "q99": p99, "q01": p01,
            "mask": list(parts[0][key]["mask"]),
        }  # fmt: skip
    out["num_transitions"] = int(sum(p["num_transitions"] for p in parts))
    out["num_trajectories"] = int(sum(p["num_trajectories"] for p in parts))
    return out
