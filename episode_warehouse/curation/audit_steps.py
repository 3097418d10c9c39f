"""The integrity audit's checks of a partition's numeric leaves, timestamps and episode lengths
(the frames' checks are in ``audit.py``, which calls these). Every threshold is a constant here
and in docs/curation.md, where each is set beside lerobot-doctor's.

Per episode:

- ``non_finite``: NaN or infinity in a float leaf (actions, states, rewards).
- ``action_at_bound``: a continuous action dimension (at least :data:`PIN_MIN_VALUES` distinct
  values in the partition) that stays at the partition's minimum or maximum for
  :data:`PIN_RUN` or more consecutive steps: a clipped or saturated controller.
- ``frozen_action``: a continuous float action whose every dimension repeats its value for
  :data:`FROZEN_ACTION_RUN` or more consecutive steps (a controller that stopped sending).
- ``action_jump``: a step where a continuous float action changes by more than
  :data:`JUMP_Z` standard deviations of the partition's step-to-step changes, averaged over its
  dimensions (lerobot-doctor's rule): a teleoperation glitch or a mislabelled unit.
- ``timestamp_order``, ``timestamp_gap``: a ``timestamp`` leaf (LeRobot) that does not increase,
  or that jumps by more than :data:`GAP_PERIODS` periods of the partition's rate.
- ``timestamp_rate``: an episode whose mean timestamp step (gaps and steps back left out: they
  are found as such) differs from the partition's period by more than :data:`RATE_TOLERANCE`
  (recorded at another rate than the dataset declares).
- ``one_step``: an episode of one step; ``short_episode``: shorter than a second at the
  partition's rate and never under :data:`SHORT_STEPS` steps (too short for an action chunk).

Per partition (a feature's dimension, true of every episode; the ``partitions`` table's
``findings``):

- ``constant_dimension``: a numeric dimension with one value in every step (a dead sensor or
  an unused degree of freedom).
- ``stuck_dimension``: an action or state dimension unchanged for more than
  :data:`STUCK_SHARE` of the steps of more than :data:`STUCK_SHARE` of the episodes, yet not
  constant in them (a stuck joint).
- ``clipped_dimension``: a continuous action dimension with more than :data:`CLIPPED_SHARE` of
  its values at its minimum or maximum.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from episode_warehouse.curation.findings import Findings
from episode_warehouse.curation.partition_arrays import PartitionArrays

PIN_RUN = 10  # consecutive steps at a bound
PIN_MIN_VALUES = 16  # distinct values for an action dimension to count as continuous
FROZEN_ACTION_RUN = 5  # consecutive identical action vectors
JUMP_Z = 8.0  # mean |change| over dimensions, in standard deviations of the changes
GAP_PERIODS = 1.5  # a timestamp step longer than this many periods is a gap
RATE_TOLERANCE = 0.1  # an episode's mean period may differ by this share
SHORT_STEPS = 5  # an episode shorter than this (or than a second) is short
STUCK_SHARE = 0.8  # of an episode's step changes, and of the episodes
STUCK_MIN_STEPS = 12  # episodes shorter than this are not judged stuck
CLIPPED_SHARE = 0.5  # of a dimension's values at one bound


def runs(flags: np.ndarray) -> Iterator[tuple[int, int]]:
    """(start, length) of every run of True in a boolean array."""
    padded = np.concatenate([[0], flags.astype(np.int8), [0]])
    edges = np.flatnonzero(np.diff(padded))
    yield from zip(edges[0::2].tolist(), (edges[1::2] - edges[0::2]).tolist(), strict=True)


def same_episode(arrays: PartitionArrays) -> np.ndarray:
    """For rows 1..N-1: whether the row is in the same episode as the row before."""
    first = np.zeros(arrays.rows, bool)
    first[arrays.starts[arrays.lengths > 0]] = True
    return ~first[1:]


def _episodes(arrays: PartitionArrays) -> Iterator[tuple[int, int, int]]:
    yield from ((e, int(s), int(n)) for e, (s, n) in enumerate(
        zip(arrays.starts.tolist(), arrays.lengths.tolist(), strict=True)))  # fmt: skip


def _continuous(values: np.ndarray) -> list[int]:
    """The dimensions of a float leaf with at least :data:`PIN_MIN_VALUES` distinct values."""
    out = []
    for d in range(values.shape[1]):
        column = np.asarray(values[:, d])
        if len(np.unique(column[np.isfinite(column)])) >= PIN_MIN_VALUES:
            out.append(d)
    return out


def check_lengths(arrays: PartitionArrays, fps: float | None, found: Findings) -> None:
    short = max(SHORT_STEPS, int(np.ceil(fps)) if fps else 0)
    for e, _, n in _episodes(arrays):
        if n == 1:
            found.add(e, "one_step", "", 0, 1, "the episode has one step")
        elif 1 < n < short:
            found.add(e, "short_episode", "", 0, n,
                      f"{n} steps, under {short} ({short / fps:.3g} s)" if fps
                      else f"{n} steps, under {short}")  # fmt: skip


def check_values(arrays: PartitionArrays, found: Findings) -> None:
    for key, values in arrays.numeric.items():
        if values.dtype.kind != "f":
            continue
        bad = ~np.isfinite(values).all(1)
        for e in np.unique(found.episode_of_rows(np.flatnonzero(bad))).tolist():
            rows = np.flatnonzero(bad[arrays.starts[e] : arrays.starts[e] + arrays.lengths[e]])
            found.add(e, "non_finite", key, int(rows[0]), len(rows),
                      f"{len(rows)} steps hold NaN or infinity")  # fmt: skip


def continuous_actions(arrays: PartitionArrays) -> dict[str, list[int]]:
    """Each float action leaf's continuous dimensions (read once: both passes use them)."""
    return {key: _continuous(values) for key, values in arrays.floats("action")}


def check_actions(arrays: PartitionArrays, continuous_dims: dict[str, list[int]],
                  found: Findings) -> None:  # fmt: skip
    within = np.concatenate([[False], same_episode(arrays)])  # row r continues row r-1
    for key, values in arrays.floats("action"):
        continuous = continuous_dims[key]
        for d in continuous:
            column = np.asarray(values[:, d])
            finite = column[np.isfinite(column)]
            for bound, name in ((finite.min(), "minimum"), (finite.max(), "maximum")):
                for start, length in runs(column == bound):
                    _pinned(key, d, name, bound, start, length, within, found)
        if continuous:
            _frozen(key, values, within, found)
            _jumps(key, values, within, found)


def _pinned(key, d, name, bound, start, length, within, found: Findings) -> None:
    # a run may cross episodes: split it where an episode starts
    cuts = [start] + [r for r in range(start + 1, start + length) if not within[r]]
    for a, b in zip(cuts, [*cuts[1:], start + length], strict=True):
        if b - a >= PIN_RUN:
            found.add_row("action_at_bound", f"{key}[{d}]", a, b - a,
                          f"{b - a} steps at the partition's {name} {bound:.6g}")  # fmt: skip


def _frozen(key: str, values: np.ndarray, within: np.ndarray, found: Findings) -> None:
    """Runs of identical action vectors within an episode."""
    rows = np.asarray(values)
    same = np.zeros(len(rows), bool)  # row r equals row r-1 of its episode
    same[1:] = (rows[1:] == rows[:-1]).all(1) & within[1:]
    for start, length in runs(same):
        if length + 1 >= FROZEN_ACTION_RUN:
            found.add_row("frozen_action", key, start - 1, length + 1,
                          f"{length + 1} identical consecutive actions")  # fmt: skip


def _jumps(key: str, values: np.ndarray, within: np.ndarray, found: Findings) -> None:
    rows = np.asarray(values, np.float64)
    changes = np.diff(rows, axis=0)[within[1:]]
    if not len(changes):
        return
    with np.errstate(invalid="ignore"):
        scale = np.nanstd(np.where(np.isfinite(changes), changes, np.nan), axis=0)
    scale[~(scale > 0)] = 1.0
    z = np.zeros(len(rows))
    with np.errstate(invalid="ignore"):
        z[1:] = np.abs(np.diff(rows, axis=0) / scale).mean(1)
    big = (z > JUMP_Z) & within
    for e in np.unique(found.episode_of_rows(np.flatnonzero(big))).tolist():
        s, n = int(found.starts[e]), int(found.ends[e] - found.starts[e])
        at = np.flatnonzero(big[s : s + n])
        found.add(e, "action_jump", key, int(at[0]), len(at),
                  f"{len(at)} steps change by {z[s + at].max():.3g} std on average over "
                  f"{rows.shape[1]} dimensions")  # fmt: skip


def check_timestamps(arrays: PartitionArrays, fps: float | None, found: Findings) -> None:
    for key, values in arrays.numeric.items():
        if key.rsplit("/", 1)[-1] != "timestamp" or values.shape[1] != 1:
            continue
        t = values[:, 0].astype(np.float64)
        for e, s, n in _episodes(arrays):
            step = np.diff(t[s : s + n])
            back = np.flatnonzero(step <= 0)
            if len(back):
                found.add(e, "timestamp_order", key, int(back[0]) + 1, len(back),
                          f"{len(back)} steps do not come after the one before")  # fmt: skip
            if not fps:
                continue
            gaps = np.flatnonzero(step > GAP_PERIODS / fps)
            if len(gaps):
                found.add(e, "timestamp_gap", key, int(gaps[0]) + 1, len(gaps),
                          f"{len(gaps)} gaps, the longest {step[gaps].max():.4g} s "
                          f"at {fps:g} Hz")  # fmt: skip
            ahead = step[(step > 0) & (step <= GAP_PERIODS / fps)]  # (gaps are found above)
            if len(ahead) and abs(ahead.mean() * fps - 1) > RATE_TOLERANCE:
                found.add(e, "timestamp_rate", key, 0, n,
                          f"a step every {ahead.mean():.4g} s on average, {1 / fps:.4g} s "
                          f"at the partition's {fps:g} Hz")  # fmt: skip


def check_dimensions(arrays: PartitionArrays, continuous_dims: dict[str, list[int]],
                     found: Findings) -> None:  # fmt: skip
    """The per-partition kinds: constant, stuck and clipped dimensions."""
    if arrays.rows < 2:
        return
    for key, values in arrays.numeric.items():
        rows = np.asarray(values, np.float64)
        with np.errstate(invalid="ignore"):
            low, high = np.nanmin(rows, axis=0), np.nanmax(rows, axis=0)
        for d in np.flatnonzero(low == high).tolist():
            found.add_partition("constant_dimension", f"{key}[{d}]",
                                f"{rows[0, d]:.6g} in all {arrays.rows} steps")  # fmt: skip
        if key == "action" or key.startswith("action/") or "state" in key:
            _stuck(key, rows, low != high, arrays, found)
        if key in continuous_dims:
            _clipped(key, rows, continuous_dims[key], found)


def _stuck(key: str, rows: np.ndarray, varies: np.ndarray, arrays, found: Findings) -> None:
    stuck = np.zeros(rows.shape[1], np.int64)  # episodes in which each dimension is stuck
    for _, s, n in _episodes(arrays):
        if n < STUCK_MIN_STEPS:
            continue
        part = rows[s : s + n]
        still = (np.diff(part, axis=0) == 0).mean(0) > STUCK_SHARE
        stuck += still & (part.min(0) != part.max(0))
    episodes = len(arrays.lengths)
    for d in np.flatnonzero((stuck > STUCK_SHARE * episodes) & varies).tolist():
        found.add_partition("stuck_dimension", f"{key}[{d}]",
                            f"unchanged in more than {STUCK_SHARE:.0%} of the steps of "
                            f"{int(stuck[d])} of {episodes} episodes")  # fmt: skip


def _clipped(key: str, rows: np.ndarray, continuous: list[int], found: Findings) -> None:
    for d in continuous:
        column = rows[:, d][np.isfinite(rows[:, d])]
        for bound, name in ((column.min(), "minimum"), (column.max(), "maximum")):
            share = float((column == bound).mean())
            if share > CLIPPED_SHARE:
                found.add_partition("clipped_dimension", f"{key}[{d}]",
                                    f"{share:.0%} of the values at the {name} "
                                    f"{bound:.6g}")  # fmt: skip
