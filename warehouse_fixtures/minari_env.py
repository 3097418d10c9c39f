"""A Gymnasium environment with a Dict observation and a camera, for Minari fixtures: a bounded
3-D state, a 32x32 RGB camera (an image to Minari, so JPEG-encoded by default) and a Discrete
mode; a bounded Box action. It terminates when the arm reaches its target, else the time limit
truncates it. Its infos carry the distance to the target (one float, also at reset)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class ArmCameraEnv(gym.Env):
    """A 3-D arm tip moving toward a target; its camera shows the tip as a bright square."""

    metadata = {"render_modes": []}

    def __init__(self) -> None:
        self.observation_space = spaces.Dict(
            {
                "state": spaces.Box(-10.0, 10.0, (3,), np.float32),
                "camera": spaces.Box(0, 255, (32, 32, 3), np.uint8),
                "mode": spaces.Discrete(3),
            }
        )
        self.action_space = spaces.Box(-1.0, 1.0, (2,), np.float32)
        self._tip: np.ndarray = np.zeros(3, np.float32)
        self._t = 0

    def _obs(self) -> dict:
        camera = np.full((32, 32, 3), 40, np.uint8)
        y, x = ((np.clip(self._tip[:2], -8, 8) + 8) * 1.5).astype(int)
        camera[y : y + 6, x : x + 6] = (250, 200, 30)
        return {"state": self._tip.copy(), "camera": camera, "mode": self._t % 3}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._tip = self.np_random.uniform(-2, 2, 3).astype(np.float32)
        self._t = 0
        return self._obs(), {"distance": float(np.linalg.norm(self._tip[:2] - 5.0))}

    def step(self, action):
        self._tip[:2] = np.clip(self._tip[:2] + np.asarray(action, np.float32), -9, 9)
        self._t += 1
        distance = float(np.linalg.norm(self._tip[:2] - 5.0))
        return self._obs(), -distance, distance < 2.5, False, {"distance": distance}


class MixedSpacesEnv(gym.Env):
    """Every other space Minari writes: a Tuple observation of a Box, a MultiDiscrete, a
    MultiBinary, a Text (the mission) and a small uint8 grid (MiniGrid's kind: not an image to
    Minari, so a state here), a MultiDiscrete action; a random walk that terminates when its
    counter wraps."""

    metadata = {"render_modes": []}
    MISSIONS = ("left", "right", "wait")

    def __init__(self) -> None:
        self.observation_space = spaces.Tuple(
            (
                spaces.Box(-5.0, 5.0, (2,), np.float64),
                spaces.MultiDiscrete([3, 4]),
                spaces.MultiBinary(3),
                spaces.Text(max_length=12),
                spaces.Box(0, 10, (7, 7, 3), np.uint8),
            )
        )
        self.action_space = spaces.MultiDiscrete([2, 3])
        self._position: np.ndarray = np.zeros(2)
        self._t = 0

    def _obs(self) -> tuple:
        bits = np.array([(self._t >> i) & 1 for i in range(3)], dtype=np.int8)
        counts = np.array([self._t % 3, self._t % 4], dtype=np.int64)
        grid = np.full((7, 7, 3), self._t % 11, dtype=np.uint8)
        return (self._position.copy(), counts, bits, self.MISSIONS[self._t % 3], grid)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._position = self.np_random.uniform(-1, 1, 2)
        self._t = 0
        return self._obs(), {}

    def step(self, action):
        self._position = np.clip(self._position + (np.asarray(action) - 1) * 0.5, -5, 5)
        self._t += 1
        return self._obs(), float(action[0]), self._t >= 7 and bool(action[1] == 2), False, {}


class CountdownEnv(gym.Env):
    """Terminates after ``3 + seed % 4`` steps: under a time limit of 5 the episodes of seeds
    0..3 end terminated, terminated, terminated *and* truncated on the same step (gymnasium's
    TimeLimit sets both), and truncated."""

    metadata = {"render_modes": []}

    def __init__(self) -> None:
        self.observation_space = spaces.Box(0.0, 10.0, (1,), np.float32)
        self.action_space = spaces.Discrete(2)
        self._t = 0
        self._end = 3

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._t, self._end = 0, 3 + (seed or 0) % 4
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self._t += 1
        return np.full(1, self._t, np.float32), 1.0, self._t >= self._end, False, {}
