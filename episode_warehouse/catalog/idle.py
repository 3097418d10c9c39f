"""openpi's idle filter for DROID: which steps of an episode its DROID training keeps.

openpi (Physical-Intelligence/openpi, ``examples/droid/compute_droid_nonidle_ranges.py`` and
``src/openpi/training/droid_rlds_dataset.py``) trains only on stretches of real movement. Its
rule, restated from that code:

1. A step is idle when no joint velocity (``action_dict/joint_velocity``) changed by 1e-3 or
   more since the step before; the first step is never idle.
2. Runs of at least ``MIN_IDLE_LEN`` (7) idle steps are dropped; shorter idle runs are kept.
3. Of what is left, runs of at least ``MIN_NON_IDLE_LEN`` (16) steps are kept, shorter ones
   dropped.
4. The last ``FILTER_LAST_N`` (10) steps of each kept run are dropped as well (their action
   chunks would be mostly idle).

:func:`nonidle_ranges` returns the steps that remain, as ``[start, stop)`` pairs within the
episode: exactly the steps openpi's loader looks up as passing its filter.
"""

from __future__ import annotations

import numpy as np

MIN_IDLE_LEN = 7
MIN_NON_IDLE_LEN = 16
FILTER_LAST_N = 10
VELOCITY_TOLERANCE = 1e-3


def _runs(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Starts and stops of the runs of True in ``mask``."""
    edges = np.diff(np.concatenate([[0], mask.astype(np.int8), [0]]))
    return np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)


def nonidle_ranges(joint_velocity: np.ndarray) -> list[tuple[int, int]]:
    """The ``[start, stop)`` step ranges openpi keeps of one episode (``joint_velocity``:
    [T, joints])."""
    velocity = np.asarray(joint_velocity, dtype=np.float64).reshape(len(joint_velocity), -1)
    idle = np.zeros(len(velocity), dtype=bool)
    if len(velocity) > 1:
        idle[1:] = (np.abs(np.diff(velocity, axis=0)) < VELOCITY_TOLERANCE).all(axis=1)
    keep = np.ones(len(velocity), dtype=bool)
    for start, stop in zip(*_runs(idle), strict=True):
        if stop - start >= MIN_IDLE_LEN:
            keep[start:stop] = False
    return [
        (int(start), int(stop) - FILTER_LAST_N)
        for start, stop in zip(*_runs(keep), strict=True)
        if stop - start >= MIN_NON_IDLE_LEN
    ]
