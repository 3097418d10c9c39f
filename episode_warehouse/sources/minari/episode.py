"""One Minari episode as a backend reader hands it over, and the checks every backend shares.

An episode of N steps holds N+1 observations (the first from ``reset``, one after each step),
N actions, rewards, terminations and truncations, and infos (N+1 where Minari's
``DataCollector`` recorded the reset's too). Leaves are keyed by their space path.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from episode_warehouse.errors import CorruptInputError
from episode_warehouse.sources.minari.spaces import Leaf

_FIX = "the dataset is malformed: download it again, or write it again with Minari"


@dataclass
class RawEpisode:
    """An episode's arrays (images decoded, texts as lists of str)."""

    id: int
    observations: dict[tuple[str, ...], object]
    actions: dict[tuple[str, ...], object]
    rewards: np.ndarray
    terminations: np.ndarray
    truncations: np.ndarray
    infos: dict[tuple[str, ...], np.ndarray] = field(default_factory=dict)
    seed: int | None = None
    options: object = None
    source_file: str = ""

    @property
    def steps(self) -> int:
        return len(self.rewards)


def check_episode(ep: RawEpisode, observation: list[Leaf], action: list[Leaf], subject: str):
    """Refuse an episode whose arrays disagree with each other or with the spaces: N >= 1
    steps, N+1 observations of every leaf, N of every action leaf and flag, a termination or
    truncation only on the last step, values of bounded leaves finite and Discrete values in
    range.

    Raises:
        CorruptInputError: naming the episode, the key and what is wrong.
    """
    where = f"{subject} episode {ep.id}"
    n = ep.steps
    if n < 1:
        raise CorruptInputError("an episode of no step", subject=where, fix=_FIX)
    for name, flags in (("terminations", ep.terminations), ("truncations", ep.truncations)):
        if len(flags) != n:
            raise CorruptInputError(
                f"{len(flags)} {name} for {n} rewards (ragged episode)", subject=where, fix=_FIX
            )
        early = np.flatnonzero(np.asarray(flags[:-1], dtype=bool))
        if len(early):
            raise CorruptInputError(
                f"{name} is set at step {int(early[0])} of {n}: an episode ends at its first "
                "termination or truncation",
                subject=where,
                fix=_FIX,
            )
    for leaves, arrays, rows, what in (
        (observation, ep.observations, n + 1, "observations"),
        (action, ep.actions, n, "actions"),
    ):
        for leaf in leaves:
            key = "/".join((what, *leaf.path))
            values: Any = arrays.get(leaf.path)
            if values is None:
                raise CorruptInputError(f"no {key}", subject=where, fix=_FIX)
            if len(values) != rows:
                raise CorruptInputError(
                    f"{len(values)} {key} for {n} steps (expected {rows}: ragged episode)",
                    subject=where,
                    fix=_FIX,
                )
            if leaf.kind != "text":
                _check_values(np.asarray(values), leaf, key, where)


def _check_values(values: np.ndarray, leaf: Leaf, key: str, where: str) -> None:
    if values.shape[1:] != leaf.shape:
        raise CorruptInputError(
            f"{key} has rows of shape {values.shape[1:]}; the space declares {leaf.shape}",
            subject=where,
            fix="the metadata's space disagrees with the data: " + _FIX,
        )
    kind = np.dtype(leaf.dtype).kind
    if (values.dtype.kind in "fc") != (kind in "fc") or values.dtype.kind not in "biuf":
        raise CorruptInputError(
            f"{key} holds {values.dtype} values; the space declares {leaf.dtype}",
            subject=where,
            fix="the metadata's space disagrees with the data: " + _FIX,
        )
    if values.dtype.kind == "f" and leaf.bounded and not np.isfinite(values).all():
        row = int(np.flatnonzero(~np.isfinite(values.reshape(len(values), -1)).all(1))[0])
        raise CorruptInputError(
            f"{key} is NaN or infinite at step {row}, where its space is bounded",
            subject=where,
            fix=_FIX,
        )
    if leaf.kind in ("discrete", "multi_discrete", "multi_binary") and len(values):
        assert leaf.low is not None and leaf.high is not None  # set for these kinds
        bad = (values < leaf.low) | (values > leaf.high)
        if bad.any():
            row = int(np.flatnonzero(bad.reshape(len(values), -1).any(1))[0])
            raise CorruptInputError(
                f"{key} is {values[row].tolist()} at step {row}, outside its space "
                f"[{leaf.low.tolist()}, {leaf.high.tolist()}]",
                subject=where,
                fix=_FIX,
            )
