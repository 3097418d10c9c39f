"""DROID at its published counts (issue #59): 2,048 TFRecord shards of DROID's schema, episode
lengths drawn around DROID's mean (~290 steps), 80% successes, cameras as tiny valid JPEGs.

What is real and what is not:
- real: the shard count and names (``droid-train.tfrecord-00000-of-02048`` ...), the schema
  (``features.json`` of ``warehouse_fixtures.droid``, every leaf), the RLDS wire format, the
  length distribution and the success share; with ``per_shard=None`` the episode count too
  (95,658: 46 or 47 a shard);
- stated: the cameras are ``size`` pixels (8x8 by default, declared so in ``features.json``:
  a reader checks decoded frames against the declared shape), and by default each shard holds
  one episode, a fraction (1/46.7) of DROID's, so the whole folder is written in minutes on
  two cores. Everything whose cost grows with shards (listing, ranges, partitions, runs, open
  files) is at DROID's count; per-episode costs are projected from the fraction.

Shards are written by a pool of processes (one shard a task), ``dataset_info.json`` last: a
listing before it is complete sees no dataset.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from warehouse_fixtures import rlds_writer as w
from warehouse_fixtures.droid import NAME, VERSION, droid_episode, features

SHARDS, EPISODES = 2048, 95_658
SUCCESS_SHARE = 0.8  # 76k of 95,658
MEAN_LENGTH = 290
TINY = (8, 8)


@dataclass(frozen=True)
class ScaleFixture:
    """What was written (the benchmark's ground truth and figures)."""

    folder: Path
    shards: int
    episodes: int
    steps: int
    successes: int
    bytes: int
    seconds: float


def shard_counts(shards: int = SHARDS, episodes: int = EPISODES) -> np.ndarray:
    """DROID's episodes spread over its shards as TFDS spreads them: evenly, the first
    ``episodes % shards`` shards one more."""
    counts = np.full(shards, episodes // shards, np.int64)
    counts[: episodes % shards] += 1
    return counts


def episode_plan(seed: int) -> tuple[int, bool]:
    """Episode ``seed``'s length (a gamma of shape 4 around 290, at least 10) and success."""
    rng = np.random.default_rng([seed, 59])
    length = max(10, int(rng.gamma(4.0, MEAN_LENGTH / 4.0)))
    return length, bool(rng.random() < SUCCESS_SHARE)


def _write_shard(task: tuple[Path, dict, int, int, tuple[int, int]]) -> tuple[int, int, int]:
    path, feats, first, count, size = task
    steps = successes = 0
    records = []
    for seed in range(first, first + count):
        length, success = episode_plan(seed)
        records.append(droid_episode(seed, size=size, length=length, success=success).record)
        steps += length
        successes += success
    w.write_shard(path, feats, records)
    return count, steps, successes


def write_droid_scale(
    root: Path,
    *,
    shards: int = SHARDS,
    per_shard: int | None = 1,
    size: tuple[int, int] = TINY,
    processes: int | None = None,
) -> ScaleFixture:
    """``root/droid/1.0.1/`` with ``shards`` shards of ``per_shard`` episodes each (``None``:
    DROID's own 46-47), written by ``processes`` processes (default: every core; 1: this one)."""
    folder = Path(root) / NAME / VERSION
    folder.mkdir(parents=True, exist_ok=True)
    counts = shard_counts(shards) if per_shard is None else np.full(shards, per_shard, np.int64)
    firsts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    feats = features(*size)
    tasks = [
        (folder / w.shard_name(w.TEMPLATE, NAME, "train", i, shards), feats, int(f), int(n), size)
        for i, (f, n) in enumerate(zip(firsts, counts, strict=True))
    ]
    started = time.perf_counter()
    processes = processes or os.cpu_count() or 1
    if processes == 1:
        written = [_write_shard(task) for task in tasks]
    else:
        with ProcessPoolExecutor(processes) as pool:
            written = list(pool.map(_write_shard, tasks, chunksize=8))
    w.write_metadata(folder, NAME, VERSION, feats, {"train": [n for n, _, _ in written]})
    seconds = time.perf_counter() - started
    return ScaleFixture(
        folder=folder,
        shards=shards,
        episodes=sum(n for n, _, _ in written),
        steps=sum(s for _, s, _ in written),
        successes=sum(k for _, _, k in written),
        bytes=sum(p.stat().st_size for p in folder.iterdir()),
        seconds=round(seconds, 1),
    )
