"""The decoded folder of one OpenX dataset being filled, episode by episode, column by column.

Both layouts (WebDataset pickles, RLDS records) end here. Roles: ``observation/*`` are
observations (stored once), ``reward`` is the reward, ``is_terminal`` the terminal flag;
``is_first``/``is_last`` are the episode boundaries themselves and are not stored; the language
instruction becomes ``task_index`` per step (the tasks listed in meta.json); any other key
(action, discount, language_embedding, ...) is kept per step under its own name. Every episode
must have the first one's keys, shapes and dtypes.

Writing overlaps decoding: an episode's arrays are written by one writer thread while the next
episode decodes, so memory holds at most two decoded episodes (the one being written, the one
being decoded); a write error surfaces at the next episode or at :meth:`EpisodeSink.finish`.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from episode_warehouse.decoded import ArraySpec, DecodedWriter
from episode_warehouse.decoded.format import episode_table
from episode_warehouse.errors import CorruptInputError

log = logging.getLogger(__name__)
BOUNDARY_KEYS = ("is_first", "is_last")
TERMINAL_KEY = "is_terminal"


def role(key: str) -> str:
    if key.startswith("observation/"):
        return "observation"
    if key == "reward":
        return "reward"
    if key == TERMINAL_KEY:
        return "terminal"
    return "step"


@dataclass
class EpisodeRow:
    """What one episode adds to the episodes table beyond its arrays."""

    source: str  # the shard it came from
    instruction: str | None = None
    split: str | None = None
    dataset_version: str | None = None
    metadata: dict | None = None


@dataclass
class EpisodeSink:
    staging: Path
    writer: DecodedWriter = field(init=False)
    specs: dict[str, ArraySpec] | None = None  # the first episode's layout
    tasks: dict[str, int] = field(default_factory=dict)
    rows: list[tuple[int, int, float | None, bool, EpisodeRow]] = field(default_factory=list)
    steps: int = 0
    _writes: ThreadPoolExecutor = field(init=False)
    _started: float = field(init=False, default=0.0)
    _pending: list[Future] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.writer = DecodedWriter(self.staging)
        self._writes = ThreadPoolExecutor(1, thread_name_prefix="decoded-writer")
        self._started = time.perf_counter()

    def __enter__(self) -> EpisodeSink:
        return self

    def __exit__(self, *exc) -> None:
        self._writes.shutdown(wait=True, cancel_futures=True)

    def _wait(self) -> None:
        """Until the previous episode is written (its error, if any, is raised here)."""
        pending, self._pending = self._pending, []
        for future in pending:
            future.result()

    def task_index(self, texts: list[str]) -> np.ndarray:
        """Per-step task ids of per-step instructions (new ones are added to the tasks)."""
        return np.array([self.tasks.setdefault(t, len(self.tasks)) for t in texts], np.int64)

    def add(
        self, subject: str, length: int, columns: Iterable[tuple[str, np.ndarray]], row: EpisodeRow
    ) -> None:
        """Append one episode: ``columns`` are (key, (length, ...) array), taken one at a time.

        Raises:
            CorruptInputError: a column of another length, or keys, shapes or dtypes that differ
                from the dataset's first episode.
        """
        first = self.specs is None
        seen: dict[str, ArraySpec] = {}
        arrays: list[tuple[ArraySpec, np.ndarray]] = []
        reward = None
        terminal = False
        for key, arr in columns:
            if key in BOUNDARY_KEYS:
                continue
            if len(arr) != length:
                raise CorruptInputError(
                    f"{key} has {len(arr)} steps, the episode has {length}", subject=subject
                )
            spec = ArraySpec(key, tuple(arr.shape[1:]), arr.dtype.str, role(key))
            if not first and (self.specs or {}).get(key) != spec:
                self._differs(subject, {**seen, key: spec})
            seen[key] = spec
            arrays.append((spec, arr))
            if key == "reward":
                reward = float(arr.astype(np.float64).sum())
            if key == TERMINAL_KEY:
                terminal = bool(arr[-1])
        if first:
            self.specs = seen
        elif seen.keys() != (self.specs or {}).keys():
            self._differs(subject, seen)
        self._wait()
        self._pending = [self._writes.submit(self.writer.append, *item) for item in arrays]
        self.rows.append((self.steps, length, reward, terminal, row))
        self.steps += length

    def _differs(self, subject: str, these: dict[str, ArraySpec]) -> None:
        specs = self.specs or {}
        diff = sorted(k for k in set(specs) | set(these) if specs.get(k) != these.get(k))
        raise CorruptInputError(
            f"keys or shapes differ from the dataset's first episode: {diff[:4]}",
            subject=subject,
            fix="the dataset mixes episode layouts; remove this one",
        )

    def finish(self, lineage: dict, *, subject: str, fix: str) -> dict:
        """Write the episodes table and meta.json; return meta.json.

        Raises:
            CorruptInputError: no episode was added (``subject`` and ``fix`` name the input).
        """
        self._wait()
        if self.specs is None:
            raise CorruptInputError("the dataset has no episodes", subject=subject, fix=fix)
        n = len(self.rows)
        terminated = np.array([r[3] for r in self.rows], dtype=bool)
        extra = [r[4] for r in self.rows]
        episodes = episode_table(
            {
                "episode": np.arange(n, dtype=np.int64),
                "start": np.array([r[0] for r in self.rows], dtype=np.int64),
                "length": np.array([r[1] for r in self.rows], dtype=np.int64),
                "return": pa.array([r[2] for r in self.rows], pa.float64()),
                "terminated": terminated,
                "truncated": ~terminated,
                "true_start": np.ones(n, dtype=bool),
                "complete": terminated,
                "language_instruction": [e.instruction for e in extra],
                "source_files": [[e.source] for e in extra],
                "split": [e.split for e in extra],
                "dataset_version": [e.dataset_version for e in extra],
                "episode_metadata": [
                    None if e.metadata is None else json.dumps(e.metadata, sort_keys=True)
                    for e in extra
                ],
            }
        )
        meta = self.writer.finish(episodes, {"tasks": list(self.tasks), **lineage})
        seconds = time.perf_counter() - self._started
        log.info("decoded %d episodes, %d steps in %.1f s", n, self.steps, seconds)
        return meta
