"""Dopamine's episode time limit: an episode cut by it is truncated, not terminated.

Dopamine's runner ends an episode when the game is over **or** after ``max_steps_per_episode``
= 27,000 agent steps, and its agent logs both endings as terminal (RL Unplugged: discount 0 on
the last row; Dopamine checkpoints: terminal 1). Only the game over is a terminal state: a
value bootstrapped past a time limit must not be zero. So an episode that provably starts at
its first step and has exactly 27,000 rows ended by the time limit: it is truncated. Both
layouts apply this one rule (shared/reference/rl-unplugged-atari.md, "Semantics").
"""

from __future__ import annotations

import numpy as np

MAX_EPISODE_STEPS = 27_000  # dopamine/discrete_domains/run_experiment.py: max_steps_per_episode


def hit_time_limit(lengths: np.ndarray, true_start: np.ndarray, ended: np.ndarray) -> np.ndarray:
    """Per episode, whether the logger's terminal mark was the time limit, not a game over.

    Args:
        lengths: rows of each episode (fragment).
        true_start: whether each starts at its episode's first step (a fragment that starts
            later may be the tail of a 27,000-step episode, but cannot be proven to be).
        ended: whether the logger marked each one's last row terminal.
    """
    lengths = np.asarray(lengths)
    return np.asarray(ended, bool) & np.asarray(true_start, bool) & (lengths == MAX_EPISODE_STEPS)
