"""The score hook: a per-episode number computed by a Python function, kept as a catalog column
``score_<name>`` with lineage (docs/curation.md).

A score is a :class:`Score`: a name (a column name), a version (bump it when the function's
meaning changes: every partition's score is recomputed) and a function from a partition's
:class:`ScoreInput` to one float per episode (NaN: no score, NULL in SQL). The code location
makes one partitioned asset ``<source>_score_<name>`` of each, downstream of the partition's
TED and catalog rows: it re-runs when either changes or the version does.

Two built-ins need no model:

- ``quality``: the catalog's quality signals folded into [0, 1]:
  ``(1 - idle_fraction) / (1 + jerk / median jerk of the partition)``; without a jerk (discrete
  actions, fewer than three steps) ``1 - idle_fraction``; NULL for a one-step episode.
- ``success_progress``: 1 for a successful episode; for a failed one, half its progress:
  ``0.5 * clip(return / best return of the partition, 0, 1)`` (0 where the partition has no
  positive return). Success is the catalog's ``success`` (DROID's own label) where the dataset
  records one; else, in a dataset whose every reward is 0 or 1 (a sparse success reward, as
  most RLDS datasets publish), an episode succeeds when its last reward is 1. NULL where
  neither says (e.g. dense rewards, Atari).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from episode_warehouse.errors import ConfigError

if TYPE_CHECKING:
    from tensordict import TensorDictBase


@dataclass(frozen=True)
class ScoreInput:
    """What a score function reads of one partition: its catalog rows (every column of the
    ``episode_rows`` view, one row per episode in episode order) and its TED."""

    episodes: pa.Table
    ted_folder: Path

    @cached_property
    def ted(self) -> TensorDictBase:
        """The partition's TED (memory-mapped; cameras decode where they are indexed)."""
        from episode_warehouse.ted.open import open_ted_folder  # torch: not at definition time

        return open_ted_folder(self.ted_folder)

    def column(self, name: str) -> np.ndarray:
        """A numeric catalog column as float64, NaN for NULL."""
        values = self.episodes.column(name).to_numpy(zero_copy_only=False)
        return np.array([np.nan if v is None else v for v in values], np.float64)

    def steps(self, key: str | tuple[str, ...]) -> list[np.ndarray]:
        """Each episode's rows of a TED key (``"next/reward"``), as numpy arrays."""
        values = self.ted.get(tuple(key.split("/")) if isinstance(key, str) else key).numpy()
        starts = self.episodes.column("start").to_numpy()
        lengths = self.episodes.column("length").to_numpy()
        return [values[s : s + n] for s, n in zip(starts.tolist(), lengths.tolist(), strict=True)]


@dataclass(frozen=True)
class Score:
    """A per-episode score: ``compute(ScoreInput)`` gives one float per episode (NaN: none)."""

    name: str
    version: str
    compute: Callable[[ScoreInput], np.ndarray]
    doc: str = ""

    def values(self, given: ScoreInput) -> np.ndarray:
        """The function's values, checked: one finite-or-NaN float per episode.

        Raises:
            ConfigError: another count of values, or values that are not numbers (naming the
                score and the fix).
        """
        try:
            values = np.asarray(self.compute(given), dtype=np.float64).reshape(-1)
        except (TypeError, ValueError) as exc:
            raise ConfigError(
                f"the score function gave values that are not numbers ({exc})",
                subject=f"score {self.name!r}", fix="return one float per episode",
            ) from exc  # fmt: skip
        if len(values) != given.episodes.num_rows:
            raise ConfigError(
                f"the score function gave {len(values)} values for "
                f"{given.episodes.num_rows} episodes",
                subject=f"score {self.name!r}",
                fix="return one float per episode, in the order of ScoreInput.episodes",
            )
        return np.where(np.isinf(values), np.nan, values)


def _quality(given: ScoreInput) -> np.ndarray:
    idle = given.column("idle_fraction")
    jerk = given.column("jerk")
    finite = jerk[np.isfinite(jerk)]
    median = float(np.median(finite)) if len(finite) else np.nan
    smooth = np.where(np.isfinite(jerk) & (median > 0), 1.0 / (1.0 + jerk / (median or 1.0)), 1.0)
    return (1.0 - idle) * smooth


def _success_progress(given: ScoreInput) -> np.ndarray:
    n = given.episodes.num_rows
    success = np.array(
        [np.nan if v is None else float(v) for v in given.episodes.column("success").to_pylist()]
    )
    if np.isnan(success).all() and ("next", "reward") in given.ted.keys(True, True):
        rewards = given.steps("next/reward")
        every = np.concatenate([r.reshape(-1) for r in rewards]) if rewards else np.zeros(0)
        if len(every) and np.isin(every, (0.0, 1.0)).all():
            success = np.array([float(r.reshape(-1)[-1] == 1.0) if len(r) else np.nan
                                for r in rewards])  # fmt: skip
    returns = given.column("return")
    best = np.nanmax(returns) if np.isfinite(returns).any() else np.nan
    progress = (
        np.clip(np.nan_to_num(returns / best), 0.0, 1.0) if best and best > 0 else np.zeros(n)
    )
    return np.where(success == 1.0, 1.0, np.where(success == 0.0, 0.5 * progress, np.nan))


BUILT_IN = (
    Score("quality", "1", _quality, "idle fraction and jerk folded into [0, 1]"),
    Score("success_progress", "1", _success_progress,
          "1 for success, half the progress for a failure, NULL where no success is recorded"),
)  # fmt: skip


def load_scores(spec: str) -> list[Score]:
    """The scores a setting names: ``module:attribute`` entries, comma-separated, each a
    :class:`Score` or a list of them (``EPISODE_WAREHOUSE_SCORES=my_scores:SCORES``).

    Raises:
        ConfigError: an entry that does not import, or is not a Score (naming it).
    """
    found: list[Score] = []
    for entry in (e.strip() for e in spec.split(",") if e.strip()):
        module, _, attribute = entry.partition(":")
        try:
            value = getattr(importlib.import_module(module), attribute or "SCORES")
        except (ImportError, AttributeError) as exc:
            raise ConfigError(
                f"the score {entry!r} cannot be loaded ({exc})", subject="EPISODE_WAREHOUSE_SCORES",
                fix="name module:attribute of a Score (or a list of them) on the Python path",
            ) from exc  # fmt: skip
        items = value if isinstance(value, list | tuple) else [value]
        if not all(isinstance(v, Score) for v in items):
            raise ConfigError(
                f"{entry!r} is not a Score", subject="EPISODE_WAREHOUSE_SCORES",
                fix="make it episode_warehouse.curation.scores.Score(name, version, function)",
            )  # fmt: skip
        found += items
    return found
