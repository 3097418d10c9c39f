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

Per shard, incrementally: the decoder announces each shard with :meth:`EpisodeSink.shard` and a
fingerprint of everything its decoded rows depend on (the shard's bytes as listed, the features,
the code and format versions). meta.json keeps each shard's fingerprint and its episode and row
ranges (``shards``). When the previous build of this folder holds the shard with the same
fingerprint, its rows and episodes are copied from there (no decoding) and the decoder skips the
shard: a new version of a 2,048-shard dataset decodes only the shards that changed. The lookup
tables (tasks, texts) start as the previous build's, so copied indices keep their meaning.
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

from episode_warehouse.decoded import ArraySpec, DecodedEpisodes, DecodedWriter
from episode_warehouse.decoded.format import episode_table
from episode_warehouse.decoded.record import DecodedRecord
from episode_warehouse.errors import CorruptInputError, LimitExceededError
from episode_warehouse.frames.camera_rows import CameraRows
from episode_warehouse.limits import LIMITS_FIX, InputLimits, check_text

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
    previous: DecodedEpisodes | None = None  # the build this one replaces: shards to copy
    writer: DecodedWriter = field(init=False)
    specs: dict[str, ArraySpec] | None = None  # the first episode's layout
    limits: InputLimits = field(default_factory=InputLimits)
    tasks: dict[str, int] = field(default_factory=dict)
    texts: dict[str, dict[str, int]] = field(default_factory=dict)
    rows: list[tuple[int, int, float | None, bool, EpisodeRow]] = field(default_factory=list)
    steps: int = 0
    shards: dict[str, dict] = field(default_factory=dict)  # meta.json "shards"
    reused: int = 0  # shards copied from the previous build
    _open: tuple[str, str, int, int] | None = None  # name, fingerprint, first episode, first row
    _previous_episodes: pa.Table | None = None  # read once, when the first shard is copied
    _writes: ThreadPoolExecutor = field(init=False)
    _started: float = field(init=False, default=0.0)
    _pending: list[Future] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.writer = DecodedWriter(self.staging)
        self._writes = ThreadPoolExecutor(1, thread_name_prefix="decoded-writer")
        self._started = time.perf_counter()
        if self.previous is not None:
            old = self.previous.meta
            self.tasks = {t: i for i, t in enumerate(old.tasks)}
            self.texts = {
                k: {t: i for i, t in enumerate(v)} for k, v in old.extra.get("texts", {}).items()
            }

    def __enter__(self) -> EpisodeSink:
        return self

    def __exit__(self, *exc) -> None:
        self._writes.shutdown(wait=True, cancel_futures=True)

    def _wait(self) -> None:
        """Until the previous episode is written (its error, if any, is raised here)."""
        pending, self._pending = self._pending, []
        for future in pending:
            future.result()

    def task_index(self, texts: list[str], where: str = "") -> np.ndarray:
        """Per-step task ids of per-step instructions (new ones are added to the tasks)."""
        return self._indices(self.tasks, "the language instruction", texts, where)

    def text_index(self, key: str, texts: list[str], where: str = "") -> np.ndarray:
        """Per-step indices of any other text leaf into its own list (meta.json ``texts``)."""
        return self._indices(self.texts.setdefault(key, {}), key, texts, where)

    def _indices(self, table: dict[str, int], what: str, texts: list[str], where: str):
        """Each text's index in ``table``; a new text is checked against the limits first (its
        table is kept in the record, which every reader reads whole: a 70 MB instruction made
        a record readers refuse, and every rebuild published it again)."""
        out = np.empty(len(texts), np.int64)
        for t, text in enumerate(texts):
            index = table.get(text)
            if index is None:
                check_text(text, self.limits, what=f"{what} at step {t}", subject=where)
                if len(table) >= self.limits.max_texts:
                    raise LimitExceededError(
                        f"{what} holds more than {self.limits.max_texts:,} distinct texts",
                        subject=where,
                        fix=LIMITS_FIX,
                    )
                index = table[text] = len(table)
            out[t] = index
        return out

    def shard(self, name: str, fingerprint: str) -> bool:
        """Start shard ``name``; True when its episodes were copied from the previous build
        (same fingerprint): the caller skips decoding it."""
        self._close_shard()
        self._open = (name, fingerprint, len(self.rows), self.steps)
        old = self._reusable(name, fingerprint)
        if old is None:
            return False
        self._copy(old)
        self.reused += 1
        return True

    def _close_shard(self) -> None:
        if self._open is None:
            return
        name, fingerprint, first, start = self._open
        self.shards[name] = {
            "fingerprint": fingerprint,
            "first_episode": first,
            "episodes": len(self.rows) - first,
            "start": start,
            "rows": self.steps - start,
        }
        self._open = None

    def _reusable(self, name: str, fingerprint: str) -> dict | None:
        """The previous build's entry of this shard, when it can be copied as it is."""
        if self.previous is None:
            return None
        old = self.previous.meta.extra.get("shards", {}).get(name)
        if not isinstance(old, dict) or old.get("fingerprint") != fingerprint:
            return None
        ends = (old["first_episode"] + old["episodes"], old["start"] + old["rows"])
        if ends[0] > self.previous.meta.episodes or ends[1] > self.previous.rows:
            return None  # not a range of that build: decode the shard again
        return old

    def _copy(self, old: dict) -> None:
        """Append the previous build's rows and episodes of one shard."""
        previous = self.previous
        if previous is None:
            raise RuntimeError("_copy without a previous build")
        specs = previous.arrays
        subject = f"{previous.folder} (shard copied from the previous build)"
        if self.specs is None:
            self.specs = specs
        elif specs != self.specs:
            self._differs(subject, specs)
        start, rows = old["start"], old["rows"]
        self._wait()
        self._pending = [
            self._writes.submit(self.writer.append_from, spec, previous, start, rows)
            for key, spec in specs.items()
        ]
        if self._previous_episodes is None:
            self._previous_episodes = previous.episodes()
        table = self._previous_episodes.slice(old["first_episode"], old["episodes"])
        for e in table.to_pylist():
            metadata = e["episode_metadata"]
            row = EpisodeRow(
                source=(e["source_files"] or [""])[0],
                instruction=e["language_instruction"],
                split=e["split"],
                dataset_version=e["dataset_version"],
                metadata=None if metadata is None else json.loads(metadata),
            )
            begin = self.steps + int(e["start"]) - start
            self.rows.append((begin, int(e["length"]), e["return"], bool(e["terminated"]), row))
        self.steps += rows

    def add(
        self,
        subject: str,
        length: int,
        columns: Iterable[tuple[str, np.ndarray | CameraRows]],
        row: EpisodeRow,
    ) -> None:
        """Append one episode: ``columns`` are (key, (length, ...) array), taken one at a time.

        Raises:
            CorruptInputError: a column of another length, or keys, shapes or dtypes that differ
                from the dataset's first episode.
        """
        first = self.specs is None
        seen: dict[str, ArraySpec] = {}
        arrays: list[tuple[ArraySpec, np.ndarray | CameraRows]] = []
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
            if key == "reward" and isinstance(arr, np.ndarray):
                reward = float(arr.astype(np.float64).sum())
            if key == TERMINAL_KEY and isinstance(arr, np.ndarray):
                terminal = bool(arr[-1])
        if first:
            self.specs = seen
        elif seen.keys() != (self.specs or {}).keys():
            self._differs(subject, seen)
        self._wait()
        self._pending = [self._writes.submit(self.writer.append, *item) for item in arrays]
        self.rows.append((self.steps, length, reward, terminal, row))
        self.steps += length

    def _renumber(self, key: str, table: dict[str, int]) -> list[str]:
        """The strings of ``table`` in order of first use in column ``key``, the column rewritten
        to match when copied shards made the order differ: an incremental build gives the
        bytes a fresh one gives, and strings only removed shards used are dropped."""
        values = list(table)
        if not self.reused or key not in (self.specs or {}):
            return values  # decoded in order: first use is the table's order
        path = (self.specs or {})[key].path(self.staging)
        column = np.load(path, mmap_mode="r+")
        used, first = np.unique(np.asarray(column), return_index=True)
        order = used[np.argsort(first)]
        if np.array_equal(order, np.arange(len(values))):
            return values
        mapping = np.zeros(len(values), np.int64)
        mapping[order] = np.arange(len(order))
        column[:] = mapping[column]
        column.flush()
        del column
        return [values[i] for i in order]

    def _differs(self, subject: str, these: dict[str, ArraySpec]) -> None:
        specs = self.specs or {}
        diff = sorted(k for k in set(specs) | set(these) if specs.get(k) != these.get(k))
        raise CorruptInputError(
            f"keys or shapes differ from the dataset's first episode: {diff[:4]}",
            subject=subject,
            fix="the dataset mixes episode layouts; remove this one",
        )

    def finish(self, lineage: dict, *, subject: str, fix: str) -> DecodedRecord:
        """Write the episodes table and meta.json; return meta.json.

        Raises:
            CorruptInputError: no episode was added (``subject`` and ``fix`` name the input).
        """
        self._close_shard()
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
                    None
                    if e.metadata is None
                    else json.dumps(e.metadata, sort_keys=True, allow_nan=False)
                    for e in extra
                ],
            }
        )
        self.writer.close_arrays()
        tasks = self._renumber("task_index", self.tasks)
        texts = {k: self._renumber(k, v) for k, v in self.texts.items()}
        described = {
            "tasks": tasks,
            "texts": texts,
            "shards": self.shards,
            "reused_shards": self.reused,
        }
        meta = self.writer.finish(episodes, {**described, **lineage})
        seconds = time.perf_counter() - self._started
        log.info(
            "decoded %d episodes, %d steps in %.1f s (%d of %d shards copied from the last build)",
            n,
            self.steps,
            seconds,
            self.reused,
            len(self.shards),
        )
        return meta
