"""Episode quality signals, computed once per partition at the catalog stage, for SQL.

People cut idle, jerky and outlier-length episodes before training on a dataset; these columns
make that a ``WHERE``. Each is defined once here (and in docs/catalog.md):

- ``idle_fraction``: of an episode's steps after its first, the share at which no action and no
  state dimension moved more than :data:`IDLE_TOLERANCE` of that dimension's range over the
  partition (an integer action counts as moved when it changed). States are the TED's
  non-image float observations; where there are none (Atari), only the action counts. NULL
  for one-step episodes.
- ``jerk``: the 0.95 quantile, over an episode's steps, of the root mean square of the action's
  second difference (``a[t] - 2 a[t-1] + a[t-2]``), each dimension divided by its standard
  deviation over the partition. Over the action's float dimensions, whatever else the action
  holds (OXE's ``terminate_episode`` and other integer or boolean leaves are left out: a jerk
  of the same dimensions on every schema), NULL where it has none (Atari's discrete actions)
  and for episodes of fewer than three steps.
- ``length_z``, ``return_z``: the episode's length and return as z-scores within the partition
  (NULL when the partition's standard deviation is 0, or the return is NULL).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from tensordict import TensorDictBase

IDLE_TOLERANCE = 1e-3  # of a dimension's range over the partition
JERK_QUANTILE = 0.95
COLUMNS = ("idle_fraction", "jerk", "length_z", "return_z")


def _leaves(td: TensorDictBase, prefix: str) -> list[tuple[np.ndarray, bool]]:
    """The leaves under ``prefix`` as ((N, d) float64 array, whether it was floating point);
    under ``observation`` only float leaves (states: cameras and integer frames left out)."""
    if prefix not in td:
        return []
    node = td.get(prefix)
    keys = sorted(node.keys(True, True), key=str) if hasattr(node, "keys") else [None]
    out = []
    for key in keys:
        leaf = node if key is None else node.get(key)
        if prefix == "observation" and not leaf.dtype.is_floating_point:
            continue
        flat = leaf.numpy().reshape(len(leaf), -1).astype(np.float64)
        out.append((flat, leaf.dtype.is_floating_point))
    return out


def _z(values: np.ndarray) -> np.ndarray:
    ok = np.isfinite(values)
    if ok.sum() < 2 or np.std(values[ok]) == 0:
        return np.full(len(values), np.nan)
    return (values - values[ok].mean()) / values[ok].std()


def quality_columns(td: TensorDictBase, starts: np.ndarray, lengths: np.ndarray,
                    returns: np.ndarray) -> dict[str, pa.Array]:  # fmt: skip
    """The quality columns of a partition's episodes (``starts``, ``lengths`` and ``returns``
    in the order of its episode table; NaN returns for none)."""
    actions = _leaves(td, "action")
    rows = td.batch_size[0]
    action = np.concatenate([a for a, _ in actions], 1) if actions else np.zeros((rows, 0))
    moving = np.concatenate([action, *(s for s, _ in _leaves(td, "observation"))], 1)
    span = moving.max(0) - moving.min(0) if rows else np.zeros(moving.shape[1])
    tolerance = np.where(span > 0, IDLE_TOLERANCE * span, 0.5)  # a constant dim never moves
    floats = [a for a, is_float in actions if is_float]
    smooth = np.concatenate(floats, 1) if floats else None  # the float dimensions alone
    std = smooth.std(0) if smooth is not None and len(smooth) else None
    scaled = smooth[:, std > 0] / std[std > 0] if smooth is not None and std is not None else None
    idle = np.full(len(starts), np.nan)
    jerk = np.full(len(starts), np.nan)
    for i, (start, n) in enumerate(zip(starts.tolist(), lengths.tolist(), strict=True)):
        if n >= 2:
            step = np.abs(np.diff(moving[start : start + n], axis=0))
            idle[i] = float((step <= tolerance).all(1).mean())
        if scaled is not None and n >= 3 and scaled.shape[1]:
            second = np.diff(scaled[start : start + n], n=2, axis=0)
            jerk[i] = float(np.quantile(np.sqrt((second**2).mean(1)), JERK_QUANTILE))
    columns = {
        "idle_fraction": idle,
        "jerk": jerk,
        "length_z": _z(lengths.astype(np.float64)),
        "return_z": _z(returns.astype(np.float64)),
    }
    return {k: pa.array(v, pa.float64(), mask=np.isnan(v)) for k, v in columns.items()}
