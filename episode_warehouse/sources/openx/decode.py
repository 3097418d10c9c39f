"""Decode the shards of one OpenX dataset into a decoded-episodes folder, one episode at a time.

Memory is bounded by one episode (plus the reader's buffer) whatever the dataset size: each
episode is unpickled (restricted), decoded and appended to the arrays before the next is read.
Roles: ``observation/*`` are observations (stored once), ``reward`` is the reward,
``is_terminal`` the terminal flag; ``is_first``/``is_last`` become episode boundaries;
``language_instruction`` becomes ``task_index`` plus the episode's instruction; any other key
(action, discount, language_embedding, ...) is kept per step under its own name.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import Executor, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa

from episode_warehouse.decoded import ArraySpec, DecodedWriter
from episode_warehouse.decoded.format import episode_table
from episode_warehouse.errors import CorruptInputError
from episode_warehouse.limits import InputLimits
from episode_warehouse.progress import progress
from episode_warehouse.sources.openx.episode_decode import FLAG_KEYS, decode_episode
from episode_warehouse.sources.openx.members import iter_members
from episode_warehouse.sources.openx.restricted_pickle import restricted_loads
from episode_warehouse.sources.openx.shards import Shard
from episode_warehouse.threads import compute_threads

log = logging.getLogger(__name__)


def _role(key: str) -> str:
    if key.startswith("observation/"):
        return "observation"
    if key == "reward":
        return "reward"
    if key == "is_terminal":
        return "terminal"
    return "step"


class _Episodes:
    """The decoded folder being filled: arrays appended episode by episode, one row each."""

    def __init__(self, staging: Path, limits: InputLimits, pool: Executor) -> None:
        self.writer = DecodedWriter(staging)
        self.limits = limits
        self.pool = pool
        self.specs: dict[str, ArraySpec] | None = None  # the first episode's layout
        self.tasks: dict[str, int] = {}
        self.rows: dict[str, list] = {
            k: [] for k in ("start", "length", "return", "terminated", "instruction", "source")
        }
        self.steps = 0

    def add(self, shard: Shard, key: str, payload: bytes) -> None:
        """Decode one member's episode and append it.

        Raises:
            CorruptInputError: the episode is malformed or its layout differs from the first.
        """
        subject = f"{shard.name}:{key}.data.pickle"
        episode = decode_episode(
            restricted_loads(payload, subject=subject),
            subject,
            member_bytes=len(payload),
            limits=self.limits,
            pool=self.pool,
        )
        arrays = episode.arrays
        for k in FLAG_KEYS[:2]:  # is_first / is_last: the episode boundaries themselves
            arrays.pop(k, None)
        task = self.tasks.setdefault(episode.instruction or "", len(self.tasks))
        arrays["task_index"] = np.full(episode.length, task, dtype=np.int64)
        these = {
            k: ArraySpec(k, tuple(v.shape[1:]), v.dtype.str, _role(k)) for k, v in arrays.items()
        }
        if self.specs is None:
            self.specs = these
        elif these != self.specs:
            specs = self.specs
            diff = sorted(k for k in set(specs) | set(these) if specs.get(k) != these.get(k))
            raise CorruptInputError(
                f"keys or shapes differ from the dataset's first episode: {diff[:4]}",
                subject=subject,
                fix="the dataset mixes episode layouts; remove this one",
            )
        for k, spec in self.specs.items():
            self.writer.append(spec, arrays[k])
        terminal = arrays.get("is_terminal")
        rows = self.rows
        rows["start"].append(self.steps)
        rows["length"].append(episode.length)
        rows["return"].append(
            float(arrays["reward"].astype(np.float64).sum()) if "reward" in arrays else None
        )
        rows["terminated"].append(bool(terminal[-1]) if terminal is not None else False)
        rows["instruction"].append(episode.instruction)
        rows["source"].append([shard.name])
        self.steps += episode.length

    def finish(self, lineage: dict) -> dict:
        rows, n = self.rows, len(self.rows["start"])
        terminated = np.array(rows["terminated"], dtype=bool)
        episodes = episode_table(
            {
                "episode": np.arange(n, dtype=np.int64),
                "start": np.array(rows["start"], dtype=np.int64),
                "length": np.array(rows["length"], dtype=np.int64),
                "return": pa.array(rows["return"], pa.float64()),
                "terminated": terminated,
                "truncated": ~terminated,
                "true_start": np.ones(n, dtype=bool),
                "complete": terminated,
                "language_instruction": rows["instruction"],
                "source_files": rows["source"],
            }
        )
        return self.writer.finish(episodes, {"tasks": list(self.tasks), **lineage})


def decode_shards(
    shards: list[Shard],
    staging: Path,
    *,
    lineage: dict | None = None,
    limits: InputLimits | None = None,
) -> dict:
    """Decode every episode of ``shards`` (in order) into ``staging``; return meta.json.

    Raises:
        CorruptInputError: a bad shard, member, pickle or episode (named), or no episode at all.
        LimitExceededError: an episode over the input limits (named).
    """
    limits = limits or InputLimits()
    started = time.perf_counter()
    with (
        ThreadPoolExecutor(compute_threads(4), thread_name_prefix="image-decode") as pool,
        progress("decoding episodes", None, "episodes") as bar,
    ):
        out = _Episodes(staging, limits, pool)
        for shard in shards:
            for key, payload in iter_members(shard, limits):
                out.add(shard, key, payload)
                bar.update()
    if out.specs is None:
        raise CorruptInputError(
            "the dataset has no episodes",
            subject=", ".join(s.location for s in shards) or "(no shards)",
            fix="check that the shards hold *.data.pickle members",
        )
    meta = out.finish(lineage or {})
    log.info(
        "decoded %d episodes, %d steps in %.1f s",
        meta["episodes"],
        out.steps,
        time.perf_counter() - started,
    )
    return meta
