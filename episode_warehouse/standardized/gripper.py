"""Gripper relabelling as Octo and OpenVLA define it (``octo/data/utils/data_utils.py``), in numpy.

Each takes one episode's gripper values (1-D, in step order) and returns float32 values where
1 means open and 0 closed, the convention of every standardized action.
"""

from __future__ import annotations

import numpy as np


def binarize_gripper_actions(actions: np.ndarray) -> np.ndarray:
    """Continuous gripper commands to 0/1: above 0.95 is open, below 0.05 closed; a value in
    between takes the state that comes after it (scanning back from the last step, whose own
    value starts the scan, so an episode that ends in between keeps its last value)."""
    values = np.asarray(actions, dtype=np.float32)
    out = np.empty_like(values)
    carry = values[-1] if len(values) else np.float32(0)
    for i in range(len(values) - 1, -1, -1):
        if values[i] > 0.95:
            carry = np.float32(1.0)
        elif values[i] < 0.05:
            carry = np.float32(0.0)
        out[i] = carry
    return out


def rel2abs_gripper_actions(actions: np.ndarray) -> np.ndarray:
    """Relative commands (+1 close, -1 open; |x| <= 0.1 no change) to an absolute state.

    The state before the first command is the opposite of that command (a trajectory that
    first closes started open); with no command at all the gripper is open throughout.
    """
    values = np.asarray(actions, dtype=np.float32)
    thresholded = np.where(values < -0.1, 1, np.where(values > 0.1, -1, 0)).astype(np.int64)
    nonzero = np.flatnonzero(thresholded)
    # Octo: start = -thresholded[argmax(thresholded != 0)]; argmax of all-False is 0
    start = -thresholded[nonzero[0] if len(nonzero) else 0]
    carry = 1 if start == 0 else int(start)
    out = np.empty(len(values), dtype=np.int64)
    for i, t in enumerate(thresholded):
        carry = carry if t == 0 else int(t)
        out[i] = carry
    return (out.astype(np.float32) / 2 + 0.5).astype(np.float32)


def invert_gripper_actions(actions: np.ndarray) -> np.ndarray:
    """``1 - x``: datasets whose gripper value means closed."""
    return (1 - np.asarray(actions, dtype=np.float32)).astype(np.float32)


def clip01(actions: np.ndarray) -> np.ndarray:
    return np.clip(np.asarray(actions, dtype=np.float32), 0, 1)
