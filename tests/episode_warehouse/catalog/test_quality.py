"""The catalog's quality signals (#43) against their definitions, computed here step by step."""

from __future__ import annotations

import numpy as np
import torch
from tensordict import TensorDict

from episode_warehouse.catalog.quality import quality_columns


def _robot():
    action = np.array(
        [[0, 0], [0, 0], [0, 0], [1, 1], [2, 3],  # episode 0: idle twice, then moves
         [5, 5], [6, 4], [8, 8], [7, 1], [9, 9], [3, 2]],  # episode 1: moves every step
        np.float32,
    )  # fmt: skip
    state = np.zeros((11, 1), np.float32)
    state[8:, 0] = [1.0, 2.0, 3.0]
    td = TensorDict(
        {
            "action": torch.from_numpy(action),
            "observation": {
                "state": torch.from_numpy(state),
                "image": torch.zeros(11, 3, 4, 4, dtype=torch.uint8),
            },
        },  # fmt: skip
        batch_size=[11],
    )
    return td, action, np.array([0, 5]), np.array([5, 6]), np.array([1.0, 4.0])


def _jerk_by_definition(action, start, n):
    std = action.astype(np.float64).std(0)
    values = []
    for t in range(start + 2, start + n):
        d2 = (action[t] - 2 * action[t - 1] + action[t - 2]) / std
        values.append(np.sqrt(np.mean(d2**2)))
    return np.quantile(values, 0.95)


def test_float_actions_and_states():
    td, action, starts, lengths, returns = _robot()
    got = {k: v.to_pylist() for k, v in quality_columns(td, starts, lengths, returns).items()}
    assert got["idle_fraction"] == [2 / 4, 0.0]
    assert np.allclose(got["jerk"], [_jerk_by_definition(action, 0, 5),
                                     _jerk_by_definition(action, 5, 6)])  # fmt: skip
    assert np.allclose(got["length_z"], [-1.0, 1.0]) and np.allclose(got["return_z"], [-1, 1])


def test_discrete_actions_count_repeats_and_have_no_jerk():
    action = torch.tensor([3, 3, 3, 1, 1, 2, 2], dtype=torch.int32)
    td = TensorDict(
        {"action": action, "observation": torch.zeros(7, 8, 8, dtype=torch.uint8)}, batch_size=[7]
    )
    got = quality_columns(td, np.array([0, 4]), np.array([4, 3]), np.array([np.nan, 2.0]))
    assert got["idle_fraction"].to_pylist() == [2 / 3, 1 / 2]  # repeats of the last action
    assert got["jerk"].to_pylist() == [None, None]
    assert got["return_z"].to_pylist() == [None, None]  # one return: no spread
