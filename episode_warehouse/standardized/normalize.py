"""Per-dataset normalization of actions and states, each dataset with its own statistics.

- ``normal`` (Octo's ``NORMAL``): ``(x - mean) / (std + 1e-8)`` where the mask is set (Octo
  leaves the gripper dimension of an action as it is);
- ``bounds_q99`` (OpenVLA's ``BOUNDS_Q99``): ``clip(2 (x - q01) / (q99 - q01 + 1e-8) - 1, -1, 1)``
  where the mask is set;
- ``none``.

A dimension that never varies (``min == max``) becomes 0 in both modes, as OpenVLA does for
its bounds: dividing by a zero std would otherwise turn float noise into 1e8-sized values.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

NORMALIZATIONS = ("normal", "bounds_q99", "none")


@dataclass(frozen=True)
class Normalizer:
    kind: str
    stats: dict
    mask: np.ndarray
    constant: np.ndarray

    @classmethod
    def of(cls, stats: dict, kind: str) -> Normalizer:
        mask = np.asarray(stats.get("mask", [True] * len(stats["mean"])), bool)
        constant = np.asarray(stats["min"], np.float32) == np.asarray(stats["max"], np.float32)
        return cls(kind, stats, mask, constant)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, np.float32)
        if self.kind == "none":
            return x
        if self.kind == "normal":
            mean = np.asarray(self.stats["mean"], np.float32)
            std = np.asarray(self.stats["std"], np.float32)
            y = np.where(self.mask, (x - mean) / (std + 1e-8), x)
        else:
            low = np.asarray(self.stats["q01"], np.float32)
            high = np.asarray(self.stats["q99"], np.float32)
            y = np.where(self.mask, np.clip(2 * (x - low) / (high - low + 1e-8) - 1, -1, 1), x)
        return np.where(self.constant & self.mask, np.float32(0), y).astype(np.float32)
