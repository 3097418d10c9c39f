"""The score hook: a per-episode number computed by a Python function, kept as a catalog column
``score_<name>`` with lineage (docs/curation.md).

A score is a :class:`Score`: a name (a column name), a version (bump it when the function's
meaning changes: every partition's score is recomputed) and a function from a partition's
:class:`ScoreInput` to one float per episode (NaN: no score, NULL in SQL). The code location
makes one partitioned asset ``<source>_score_<name>`` of each, downstream of the partition's
TED and catalog rows: it re-runs when either changes or the version does.

Two built-ins need no model:

- ``quality``: the catalog's quality signals folded into [0, 1]:
  ``(1 - idle_fraction) / (1 + jerk / median jerk of the partition)``; without a jerk (no float
  action dimension, fewer than three steps) ``1 - idle_fraction``; NULL for a one-step episode.
- ``success_progress``: 1 for a successful episode; for a failed one, half its progress:
  ``0.5 * clip(return / best return of the partition, 0, 1)`` (0 where the partition has no
  positive return). Success is the catalog's ``success`` (DROID's own label) where the dataset
  records one; else, in a dataset whose every reward is 0 or 1 (a sparse success reward, as
  most RLDS datasets publish), an episode succeeds when its last reward is 1. NULL where
  neither says (dense rewards), and for a source whose rewards measure a score (Atari: a
  clipped reward of 1 is a point, not a success), with the reason in the scores table.

A function may give the reason its values are NULL: it returns :class:`Scored` (the values and
the reason) instead of the values alone; the reason is kept beside each NULL value (the scores
table's ``reason``).
"""

from __future__ import annotations

import importlib
import re
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


# a score's name becomes the column score_<name> and part of its asset's name
SCORE_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")


@dataclass(frozen=True)
class ScoreInput:
    """What a score function reads of one partition: its catalog rows (every column of the
    ``episode_rows`` view, one row per episode in episode order), its TED, and what its source
    says its rewards mean."""

    episodes: pa.Table
    ted_folder: Path
    rewards_are_scores: bool = False

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
        """Each episode's rows of a TED key (``"next/reward"``), as numpy arrays of ``(steps,
        ...)``; a key with leaves under it (OXE's dict actions: ``action/world_vector``, ...)
        as ``(steps, dimensions)``, every leaf flattened and cast to float64, in the order of
        their sorted names."""
        node = self.ted.get(tuple(key.split("/")) if isinstance(key, str) else key)
        if hasattr(node, "keys"):  # a dict of leaves
            leaves = [node.get(k).numpy() for k in sorted(node.keys(True, True), key=str)]
            rows = self.ted.batch_size[0]
            values = np.concatenate(
                [leaf.reshape(rows, -1).astype(np.float64) for leaf in leaves], 1
            ) if leaves else np.zeros((rows, 0))  # fmt: skip
        else:
            values = node.numpy()
        starts = self.episodes.column("start").to_numpy()
        lengths = self.episodes.column("length").to_numpy()
        return [values[s : s + n] for s, n in zip(starts.tolist(), lengths.tolist(), strict=True)]


@dataclass(frozen=True)
class Scored:
    """A score function's values and, where some are NaN (NULL), why."""

    values: object
    reason: str


@dataclass(frozen=True)
class Score:
    """A per-episode score: ``compute(ScoreInput)`` gives one float per episode (NaN: none)."""

    name: str
    version: str
    compute: Callable[[ScoreInput], object]  # one float per episode, or Scored
    doc: str = ""

    def values(self, given: ScoreInput) -> tuple[np.ndarray, str | None]:
        """The function's values, checked: one finite-or-NaN float per episode, and the reason
        given for its NaNs (None: none given).

        Raises:
            ConfigError: another count of values, values that are not real numbers (complex,
                too large for a float), or an infinity (naming the score and the fix).
        """
        try:
            given_values = self.compute(given)
            reason = given_values.reason if isinstance(given_values, Scored) else None
            raw = given_values.values if isinstance(given_values, Scored) else given_values
            array = np.asarray(raw)
            if array.dtype.kind == "c":
                raise TypeError(f"complex values ({array.reshape(-1)[:1]!r})")
            values = np.asarray(array, dtype=np.float64)
        except (TypeError, ValueError, OverflowError) as exc:
            raise ConfigError(
                f"the score function gave values that are not real numbers ({exc})",
                subject=f"score {self.name!r}", fix="return one float per episode",
            ) from exc  # fmt: skip
        if values.ndim != 1 or len(values) != given.episodes.num_rows:
            raise ConfigError(
                f"the score function gave values of shape {values.shape} for "
                f"{given.episodes.num_rows} episodes",
                subject=f"score {self.name!r}",
                fix="return one float per episode, in the order of ScoreInput.episodes",
            )
        if np.isinf(values).any():
            at = int(np.flatnonzero(np.isinf(values))[0])
            raise ConfigError(
                f"the score function gave {values[at]} for episode row {at}",
                subject=f"score {self.name!r}",
                fix="return NaN (NULL) for an episode without a score, and say why with Scored",
            )
        return values, reason


def _quality(given: ScoreInput) -> np.ndarray:
    idle = given.column("idle_fraction")
    jerk = given.column("jerk")
    finite = jerk[np.isfinite(jerk)]
    median = float(np.median(finite)) if len(finite) else np.nan
    smooth = np.where(np.isfinite(jerk) & (median > 0), 1.0 / (1.0 + jerk / (median or 1.0)), 1.0)
    return (1.0 - idle) * smooth


def _success_progress(given: ScoreInput) -> np.ndarray | Scored:
    n = given.episodes.num_rows
    success = np.array(
        [np.nan if v is None else float(v) for v in given.episodes.column("success").to_pylist()]
    )
    sparse_reward = ("next", "reward") in given.ted.keys(True, True)
    if np.isnan(success).all() and given.rewards_are_scores:
        return Scored(np.full(n, np.nan), "the source's rewards measure a score, not success")
    if np.isnan(success).all() and sparse_reward:
        rewards = given.steps("next/reward")
        every = np.concatenate([r.reshape(-1) for r in rewards]) if rewards else np.zeros(0)
        if len(every) and np.isin(every, (0.0, 1.0)).all():
            success = np.array([float(r.reshape(-1)[-1] == 1.0) if len(r) else np.nan
                                for r in rewards])  # fmt: skip
    if np.isnan(success).all():
        return Scored(np.full(n, np.nan), "no success label, and rewards that are not 0 or 1")
    returns = given.column("return")
    best = np.nanmax(returns) if np.isfinite(returns).any() else np.nan
    progress = (
        np.clip(np.nan_to_num(returns / best), 0.0, 1.0) if best and best > 0 else np.zeros(n)
    )
    return np.where(success == 1.0, 1.0, np.where(success == 0.0, 0.5 * progress, np.nan))


BUILT_IN = (
    Score("quality", "2", _quality, "idle fraction and jerk folded into [0, 1]"),
    Score("success_progress", "2", _success_progress,
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
        for score in items:
            if not isinstance(score.name, str) or not SCORE_NAME.match(score.name):
                raise ConfigError(
                    f"{entry!r} names a score {score.name!r}: it becomes the column "
                    "score_<name> and an asset's name", subject="EPISODE_WAREHOUSE_SCORES",
                    fix="name it with 1-40 lower-case letters, digits and _, a letter first",
                )  # fmt: skip
            if any(score.name == other.name for other in (*BUILT_IN, *found)):
                raise ConfigError(
                    f"{entry!r} names a score {score.name!r} a second time",
                    subject="EPISODE_WAREHOUSE_SCORES", fix="give each score its own name",
                )  # fmt: skip
            found.append(score)
    return found
