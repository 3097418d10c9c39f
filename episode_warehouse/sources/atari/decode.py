"""Decode one Atari run (a ``replay_logs`` folder) into a decoded-episodes folder.

Two passes: the small arrays give the plan (which slot of which file is which real row, and
the fragments); then each observation file is streamed once and its rows copied to their place,
one worker process per file (``workers`` at a time), so memory stays at a few chunks whatever
the capacity.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from episode_warehouse.decoded import ArraySpec, DecodedWriter
from episode_warehouse.decoded.format import GRAY, episode_table
from episode_warehouse.decoded.record import DecodedRecord
from episode_warehouse.errors import CorruptInputError
from episode_warehouse.progress import progress
from episode_warehouse.sources.atari.checkpoint_reader import CheckpointMeta, read_checkpoint_meta
from episode_warehouse.sources.atari.dopamine_files import file_name
from episode_warehouse.sources.atari.frame_copy import copy_frames, read_slots, verify_frames
from episode_warehouse.sources.atari.stream_plan import StreamPlan, plan_stream
from episode_warehouse.sources.atari.time_limit import hit_time_limit
from episode_warehouse.workers import WorkerPool

log = logging.getLogger(__name__)


def _read_frames(meta: CheckpointMeta, slots: list[int]) -> np.ndarray:
    return read_slots(meta.observation_path, slots)


def decode_run(
    replay_dir: Path,
    suffixes: list[int],
    staging: Path,
    *,
    workers: int = 2,
    file_prefix: str = "",
    lineage: dict | None = None,
) -> DecodedRecord:
    """Decode checkpoints ``suffixes`` of ``replay_dir`` into the folder ``staging``.

    Args:
        replay_dir: local folder with the Dopamine files.
        suffixes: the checkpoint subset, any order.
        staging: an empty folder (published by the caller).
        workers: processes inflating observation files in parallel (1 = in this process).
        file_prefix: prefix for the source file names recorded per episode (``Pong/5/``).
        lineage: extra entries for meta.json (source, partition, file versions).

    Returns:
        The meta.json written (rows, episodes, plan figures).

    Raises:
        CorruptInputError: any malformed or inconsistent checkpoint file.
    """
    started = time.perf_counter()
    if not suffixes:
        raise CorruptInputError(
            "no checkpoint to decode",
            subject=str(replay_dir),
            fix="mirror at least one complete checkpoint (check the checkpoint subset)",
        )
    metas = [read_checkpoint_meta(replay_dir, s) for s in sorted(suffixes)]
    plan = plan_stream(metas, _read_frames)
    writer = DecodedWriter(staging)
    obs_spec = ArraySpec("observation", tuple(metas[0].frame_shape), "uint8", "observation")
    frames = writer.allocate(obs_spec, plan.rows, camera=True)
    writer.put(ArraySpec("action", (), "int32", "step"), plan.action)
    writer.put(ArraySpec("reward", (), "float32", "reward"), plan.reward)
    terminated = plan.fragment_ends_terminal & ~_time_limited(plan)
    terminal = np.zeros(plan.rows, dtype=bool)
    ends = plan.fragment_start + plan.fragment_length - 1
    terminal[ends] = terminated  # the logger marks only last rows; the time limit is no terminal
    writer.put(ArraySpec("terminal", (), "bool", "terminal"), terminal)
    _fill_frames(metas, plan, frames, workers)
    episodes = _episode_table(plan, file_prefix, terminated)
    meta = writer.finish(
        episodes,
        {
            "images": {"observation": GRAY},  # the 84x84 grey screen: the one camera
            "capacity": plan.capacity,
            "stack_size": plan.stack_size,
            "suffixes": [m.suffix for m in metas],
            "padding_rows": plan.padding_rows,
            "lost_rows": plan.lost_rows,
            "gaps": [
                {"before_suffix": p.suffix, "kind": p.gap_before}
                for p in plan.placements
                if p.gap_before
            ],
            "final_log": [p.suffix for p in plan.placements if p.is_final],
            "time_limited_episodes": int(_time_limited(plan).sum()),
            **(lineage or {}),
        },
    )
    log.info(
        "decoded %d frames in %d episodes in %.1f s",
        plan.rows,
        episodes.num_rows,
        time.perf_counter() - started,
    )
    return meta


def _fill_frames(metas: list[CheckpointMeta], plan: StreamPlan, frames: Path, workers: int) -> None:
    """Copy every file's frames, ``workers`` files at a time (one worker process each)."""
    jobs = [
        (m.observation_path, [(r.slot, r.row, r.length) for r in plan.copy_runs[m.suffix]], frames)
        for m in metas
    ]
    done = 0
    processes = min(workers, len(jobs)) if workers > 1 else 0
    with (
        progress("copying frames", len(jobs), "files") as bar,
        WorkerPool(processes, what="frame copy") as pool,
    ):
        for copied in pool.map(copy_frames, jobs):
            done += copied
            bar.update()
    for m in metas:
        runs = plan.verify_runs.get(m.suffix)
        if runs:
            verify_frames(m.observation_path, [(r.slot, r.row, r.length) for r in runs], frames)


def _time_limited(plan: StreamPlan) -> np.ndarray:
    return hit_time_limit(
        plan.fragment_length, plan.fragment_true_start, plan.fragment_ends_terminal
    )


def _episode_table(plan: StreamPlan, file_prefix: str, terminated: np.ndarray) -> pa.Table:
    starts, lengths = plan.fragment_start, plan.fragment_length
    returns = (
        np.add.reduceat(plan.reward.astype(np.float64), starts) if len(starts) else np.zeros(0)
    )
    chosen = {p.suffix for p in plan.placements}
    files = [
        [
            file_prefix + file_name("observation", s)
            for s in range(int(a), int(b) + 1)
            if s in chosen
        ]
        for a, b in zip(plan.fragment_first_suffix, plan.fragment_last_suffix, strict=True)
    ]
    return episode_table(
        {
            "episode": np.arange(len(starts), dtype=np.int64),
            "start": starts,
            "length": lengths,
            "return": returns,
            "terminated": terminated,
            "truncated": ~terminated,
            "true_start": plan.fragment_true_start,
            "complete": plan.fragment_true_start & plan.fragment_ends_terminal,
            "language_instruction": pa.nulls(len(starts), pa.string()),
            "source_files": files,
        }
    )
