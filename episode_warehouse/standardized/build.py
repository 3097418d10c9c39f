"""Build one standardized partition from its TED: each episode through its transform, the kept
steps' action, state, instruction and flags written as ``.npy``, the statistics computed once.
Camera views are not copied: the record names each view's frame file in the TED (the version
in ``inputs["ted"]``), which readers read through the TED's reader, rows ``ted_row``.

Folder (``standardized/<source>/<partition>/``)::

    action.npy      float32 [N, A]        state.npy   float32 [N, S] (when the dataset has one)
    instruction.npy int64 [N] (-> meta.json "instructions")
    episode.npy     int64 [N] (the TED's episode index)   ted_row.npy int64 [N] (the TED row)
    is_init.npy, done.npy, terminated.npy, truncated.npy  bool [N];  reward.npy float32 [N]
    episodes.parquet    episode, start, length, ted_episode, language_instruction
    dataset_statistics.json   {dataset: Octo's statistics}
    meta.json       StandardizedRecord, written last

Flags: ``is_init`` on each episode's first kept step, ``done`` on its last; the episode's
``terminated`` is carried to its last kept step (a transform that drops the last step keeps the
episode's ending), ``truncated = done & ~terminated``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from episode_warehouse.errors import CorruptInputError
from episode_warehouse.standardized.configs import VIEWS, DatasetConfig
from episode_warehouse.standardized.record import StandardizedRecord
from episode_warehouse.standardized.statistics import STATISTICS_FILE, octo_statistics
from episode_warehouse.standardized.transforms import Standard, Trajectory, checked
from episode_warehouse.ted.reader import TedReader

log = logging.getLogger(__name__)
EPISODES_FILE = "episodes.parquet"


@dataclass(frozen=True)
class Plan:
    """What to build: the TED, the transform, the views and the names."""

    ted: TedReader
    source: str
    partition: str
    dataset: str
    transform: Callable[[Trajectory], Standard]
    config: DatasetConfig
    mapping: dict | None = None


def _reader(ted: TedReader):
    """TED path -> every row of that key's file (None for a key that is not an array)."""
    opened: dict[str, np.ndarray | None] = {}

    def array(path: str) -> np.ndarray | None:
        if path not in opened:
            entry = ted.meta.keys.get(path)
            if entry is None or entry.get("kind") not in ("array", "unsqueeze"):
                opened[path] = None
            else:
                opened[path] = ted.file_rows(entry["file"])
        return opened[path]

    return array


def _view_files(plan: Plan, keys: dict, rows: int) -> tuple[dict, dict]:
    """view -> TED file of its frames, view -> [C, H, W]; checked to be camera frames."""
    views: dict[str, str | None] = {}
    shapes: dict[str, list[int]] = {}
    for view in VIEWS:
        name = plan.config.views[view]
        if name is None:
            views[view] = None
            continue
        path = name if "/" in name else f"observation/{name}"
        entry = keys.get(path)
        subject = f"{plan.source} {plan.partition}: view {view} ({path})"
        if entry is None:
            if plan.dataset == "bridge" and view == "secondary":
                views[view] = None  # OpenVLA configures image_1; OXE's bridge folder has none
                continue
            raise CorruptInputError(
                f"the camera {path!r} of the {view} view is not in the TED",
                subject=subject,
                fix="this folder lacks a camera Octo's config names; check the dataset id",
            )
        frames = plan.ted.file_rows(entry["file"])
        if frames.dtype != np.uint8 or frames.ndim != 4 or frames.shape[1] not in (1, 3):
            raise CorruptInputError(
                f"the {view} view's frames are {frames.dtype} {list(frames.shape[1:])}, "
                "not uint8 [C, H, W] camera frames",
                subject=subject,
                fix="every frame of a view must have one size; re-decode the dataset",
            )
        views[view] = entry["file"]
        shapes[view] = [int(d) for d in frames.shape[1:]]
    return views, shapes


def build_standardized(plan: Plan, tmp: Path, *, fps: float | None) -> StandardizedRecord:
    """Write the standardized partition of ``plan`` into ``tmp`` and return its record.

    Raises:
        CorruptInputError: a key a transform needs is missing or malformed, a value is not
            finite, a view's frames are not camera frames (each naming the partition and key),
            or no episode keeps a step.
    """
    subject = f"{plan.source} {plan.partition}"
    meta, keys = plan.ted.meta, plan.ted.meta.keys
    episodes = plan.ted.episodes().select(["episode", "start", "length"])
    read = _reader(plan.ted)
    tasks = np.array(list(meta.tasks or []) + [""], dtype=object)
    task_index = read("task_index")
    views, shapes = _view_files(plan, keys, meta.rows)

    actions, states, texts, ted_rows, ep_ids = [], [], [], [], []
    terminal_of: list[bool] = []
    terminated = read("next/terminated")
    dropped = 0
    for ep, start, length in zip(*(episodes.column(c).to_numpy() for c in episodes.column_names),
                                 strict=True):  # fmt: skip
        start, length = int(start), int(length)

        def window(path: str, s=start, n=length):
            full = read(path)
            return None if full is None else np.asarray(full[s : s + n])

        if task_index is not None:
            instruction = tasks[np.asarray(task_index[start : start + length])]
        else:
            instruction = np.full(length, "", dtype=object)
        tr = Trajectory(window, length, instruction, f"{subject} episode {int(ep)}")
        out = checked(plan.dataset, plan.transform, tr)
        if len(out.keep) == 0:
            dropped += 1
            continue
        actions.append(out.action)
        states.append(out.state)
        texts.append(out.instruction)
        ted_rows.append(start + out.keep)
        ep_ids.append(np.full(len(out.keep), int(ep), np.int64))
        ended = bool(np.asarray(terminated[start + length - 1]).any()) if terminated is not None \
            else False  # fmt: skip
        terminal_of.append(ended)
    if not actions:
        raise CorruptInputError(
            "the transform kept no step of any episode",
            subject=subject,
            fix="the episodes are too short for this transform (it drops steps)",
        )
    return _write(plan, tmp, meta, views, shapes, actions, states, texts, ted_rows, ep_ids,
                  terminal_of, dropped, fps)  # fmt: skip


def _shapes_agree(parts: list[np.ndarray], name: str, subject: str) -> None:
    widths = {p.shape[1:] for p in parts}
    if len(widths) > 1:
        raise CorruptInputError(
            f"the standardized {name} has different sizes across episodes: {sorted(widths)}",
            subject=subject,
            fix="the episodes' source arrays differ in size; re-decode the dataset",
        )


def _write(plan, tmp, meta, views, shapes, actions, states, texts, ted_rows, ep_ids,
           terminal_of, dropped, fps) -> StandardizedRecord:  # fmt: skip
    subject = f"{plan.source} {plan.partition}"
    _shapes_agree(actions, "action", subject)
    has_state = [s is not None for s in states]
    if any(has_state) and not all(has_state):
        raise CorruptInputError("some episodes have a state and others not", subject=subject)
    if all(has_state):
        _shapes_agree(states, "state", subject)
    action = np.concatenate(actions)
    state = np.concatenate(states) if all(has_state) else None
    lengths = np.array([len(a) for a in actions], np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    ends = starts + lengths - 1
    n = len(action)
    flags = {name: np.zeros(n, bool) for name in ("is_init", "done", "terminated")}
    flags["is_init"][starts] = True
    flags["done"][ends] = True
    flags["terminated"][ends[np.array(terminal_of, bool)]] = True
    flags["truncated"] = flags["done"] & ~flags["terminated"]
    table: dict[str, int] = {}
    instruction = np.array(
        [table.setdefault(str(t), len(table)) for part in texts for t in part], np.int64
    )
    ted_row = np.concatenate(ted_rows)
    reward_entry = meta.keys.get("next/reward", {})
    reward = (
        np.asarray(plan.ted.file_rows(reward_entry["file"])[ted_row]).reshape(n).astype(np.float32)
        if "file" in reward_entry
        else np.zeros(n, np.float32)
    )
    arrays = {
        "action": action.astype(np.float32),
        "instruction": instruction,
        "episode": np.concatenate(ep_ids),
        "ted_row": ted_row,
        "reward": reward,
        **flags,
    }
    if state is not None:
        arrays["state"] = state.astype(np.float32)
    for name, value in arrays.items():
        np.save(tmp / f"{name}.npy", value)
    episode_ids = [int(e[0]) for e in ep_ids]
    first_texts = [str(t[0]) for t in texts]
    pq.write_table(
        pa.table({
            "episode": pa.array(range(len(lengths)), pa.int64()),
            "start": pa.array(starts), "length": pa.array(lengths),
            "ted_episode": pa.array(episode_ids, pa.int64()),
            "language_instruction": pa.array(first_texts, pa.string()),
        }),
        tmp / EPISODES_FILE,
    )  # fmt: skip
    statistics = octo_statistics(
        action,
        state,
        episodes=len(lengths),
        action_mask=_mask(plan.config, action.shape[1]),
        subject=f"{plan.source}:{plan.partition} ({plan.ted.artifact.url})",
    )
    text = json.dumps({plan.dataset: statistics}, indent=1, allow_nan=False)
    (tmp / STATISTICS_FILE).write_text(text)
    return StandardizedRecord(
        **StandardizedRecord.current(),
        source=plan.source,
        partition=plan.partition,
        dataset=plan.dataset,
        rows=n,
        episodes=len(lengths),
        action_dim=int(action.shape[1]),
        state_dim=0 if state is None else int(state.shape[1]),
        views=views,
        image_shapes=shapes,
        instructions=list(table),
        action_mask=_mask(plan.config, action.shape[1]),
        action_encoding=plan.config.action,
        proprio_encoding=plan.config.proprio if state is not None else "NONE",
        fps=fps,
        robot_type=meta.robot_type,
        dropped_episodes=dropped,
        mapping=plan.mapping or {},
    )


def _mask(config: DatasetConfig, width: int) -> list[bool]:
    """Octo's mask when its size fits, else every dimension (a declared mapping's encoding)."""
    try:
        mask = config.action_mask
    except ValueError:
        return [True] * width
    return mask if len(mask) == width else [True] * width
