"""LeRobot v3.0 datasets with planted defects, written by lerobot's own writer
(:func:`~warehouse_fixtures.lerobot_writer.write_lerobot_dataset`): the kinds lerobot-doctor's
checks name and the integrity audit's own, each at known episodes, for ``bench.doctor_vs_audit``
and its test.

A defect is planted where a real one arises: values through the writer's ``add_frame``
(actions, states, camera frames, episode lengths), and, where lerobot's writer computes the
value itself, by editing the written files as a faulty recorder or a faulty copy would:
``timestamp`` (lerobot 0.6.1 computes it as ``frame_index / fps``) in the data parquet, a
state vector's length in one episode, frames missing from a video file, a corrupt PNG.

Each dataset comes with its :class:`Planted` record: per kind, the episodes that carry it
(dataset-wide kinds: every episode, recorded once as ``DATASET``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from warehouse_fixtures.av1 import write_av1
from warehouse_fixtures.lerobot_writer import LeRobotSpec, write_lerobot_dataset

log = logging.getLogger(__name__)

DATASET = -1  # the "episode" of a defect of the whole dataset (a feature's dimension)
FPS = 10
LENGTH = 40  # steps of an ordinary episode (4 s at 10 fps)
BIG = 100.0  # data files large enough for one file (the edits rewrite it whole)


@dataclass
class Planted:
    """A dataset's folder and, per defect kind, the episodes that carry it."""

    name: str
    folder: Path
    kinds: dict[str, set[int]] = field(default_factory=dict)
    clean: set[int] = field(default_factory=set)  # episodes with nothing planted


def _spec(repo_id: str, lengths: tuple[int, ...], **more) -> LeRobotSpec:
    side = 48 if more.get("video") else 16  # (SVT-AV1 fails on a 16x16 picture: SIGFPE)
    return LeRobotSpec(
        repo_id=repo_id,
        lengths=lengths,
        cameras={"top": (side, side)},
        fps=FPS,
        data_files_size_in_mb=BIG,
        rewards=False,
        joints=tuple(f"j{i}" for i in range(6)),
        **more,
    )


def _data_file(folder: Path) -> Path:
    (path,) = sorted((folder / "data").rglob("*.parquet"))
    return path


def _edit_column(folder: Path, column: str, change) -> None:
    """Rewrite one column of the (single) data file: ``change(table) -> new column``."""
    path = _data_file(folder)
    table = pq.read_table(path)
    index = table.schema.get_field_index(column)
    new = change(table)
    table = table.set_column(index, table.schema.field(index).with_type(new.type), new)
    pq.write_table(table, path)


def _episode_rows(table: pa.Table, episode: int) -> np.ndarray:
    return np.flatnonzero(table.column("episode_index").to_numpy() == episode)


def _shift_timestamps(folder: Path, plans: dict[int, Callable[[np.ndarray], np.ndarray]]) -> None:
    """``plans[e](t) -> new t`` for the timestamps of episode ``e`` (a float array)."""

    def change(table):
        t = table.column("timestamp").to_numpy().astype(np.float32).copy()
        for e, plan in plans.items():
            rows = _episode_rows(table, e)
            t[rows] = plan(t[rows].astype(np.float64)).astype(np.float32)
        return pa.array(t, pa.float32())

    _edit_column(folder, "timestamp", change)


def per_episode(root: Path) -> Planted:
    """Twelve episodes, one kind each (or none): the per-episode kinds."""
    lengths = (LENGTH,) * 8 + (6, 1) + (LENGTH,) * 2
    kinds = {
        "timestamp_gap": {1, 2},  # 3 frames dropped at step 20 (doctor: "dropped frames");
        # (episode 2's swap leaves a gap of two periods before it: a gap too)
        "timestamp_order": {2},  # two timestamps swapped at step 10
        "timestamp_rate": {3},  # recorded at 8 fps in a 10 fps dataset
        "frozen_action": {4},  # the action repeats for steps 10..24
        "action_jump": {5},  # every action dimension jumps by 30 at step 20
        "frozen_camera": {6},  # the camera repeats one frame for steps 5..39
        "short_episode": {8},  # 6 steps: under a second at 10 fps
        "one_step": {9},
        "duplicate": {10},  # episode 7 again, frame for frame and value for value
    }
    copied: dict[object, dict] = {}  # episode 4, 6: the frame repeated; (7, t): episode 7's

    def edit(e: int, t: int, frame: dict) -> None:
        if e == 4 and 10 < t < 25:
            frame["action"] = copied[4]["action"].copy()
        if e == 5 and t >= 20:
            frame["action"] = frame["action"] + np.float32(30.0)
        if e == 6 and t > 5:
            frame["observation.images.top"] = copied[6]["observation.images.top"].copy()
        if e == 10:
            frame.update({k: np.copy(v) for k, v in copied[7, t].items()})
        if (e, t) in ((4, 10), (6, 5)):
            copied[e] = {k: np.copy(v) for k, v in frame.items() if k != "task"}
        if e == 7:
            copied[7, t] = {k: np.copy(v) for k, v in frame.items() if k != "task"}

    spec = _spec("defects/per_episode", lengths, tasks=("pick up the cube",))
    folder = write_lerobot_dataset(spec, root, edit)
    period = 1.0 / FPS
    _shift_timestamps(
        folder,
        {
            1: lambda t: np.where(np.arange(len(t)) >= 20, t + 3 * period, t),
            2: lambda t: t[np.r_[0:10, 11, 10, 12 : len(t)]],
            3: lambda t: t * 1.25,
        },
    )
    clean = set(range(len(lengths))) - set().union(*kinds.values())
    return Planted("per_episode", folder, kinds, clean)


def dataset_wide(root: Path) -> Planted:
    """Ten episodes sharing three defects of a feature's dimension: a clipped action
    dimension (more than half of its values at its maximum), a stuck joint (unchanged for 9 in
    10 steps of every episode) and a constant state dimension (a dead sensor)."""

    def edit(e: int, t: int, frame: dict) -> None:
        frame["action"][1] = min(frame["action"][1], np.float32(-0.3))
        frame["observation.state"][3] = np.float32(0.5 if t < LENGTH - 3 else 0.7)
        frame["observation.state"][5] = np.float32(0.25)

    folder = write_lerobot_dataset(_spec("defects/dataset_wide", (LENGTH,) * 10), root, edit)
    kinds = {"clipped_dimension": {DATASET}, "stuck_dimension": {DATASET},
             "constant_dimension": {DATASET}}  # fmt: skip
    return Planted("dataset_wide", folder, kinds)


def non_finite(root: Path) -> Planted:
    """NaN in episode 1's action, infinity in episode 2's."""

    def edit(e: int, t: int, frame: dict) -> None:
        if (e, t) in ((1, 5), (2, 7)):
            frame["action"][0] = np.float32(np.nan if e == 1 else np.inf)

    folder = write_lerobot_dataset(_spec("defects/non_finite", (20,) * 4), root, edit)
    return Planted("non_finite", folder, {"non_finite": {1, 2}}, {0, 3})


def schema_change(root: Path) -> Planted:
    """Episode 2's ``observation.state`` has 5 values a step where the others have 6 (what a
    merge of recordings made with another joint configuration leaves)."""
    folder = write_lerobot_dataset(_spec("defects/schema_change", (20,) * 4), root)

    def change(table):
        rows = set(_episode_rows(table, 2).tolist())
        values = table.column("observation.state").to_pylist()
        return pa.array([v[:5] if i in rows else v for i, v in enumerate(values)],
                        pa.list_(pa.float32()))  # fmt: skip

    _edit_column(folder, "observation.state", change)
    return Planted("schema_change", folder, {"schema_change": {2}}, {0, 1, 3})


def corrupt_png(root: Path) -> Planted:
    """Episode 1's camera frame at step 4 loses its last 40 bytes (a truncated copy)."""
    folder = write_lerobot_dataset(_spec("defects/corrupt_png", (20,) * 3), root)

    def change(table):
        rows = _episode_rows(table, 1)
        column = table.column("observation.images.top")
        values = column.to_pylist()
        values[int(rows[4])] = dict(values[int(rows[4])], bytes=values[int(rows[4])]["bytes"][:-40])
        return pa.array(values, column.type)

    _edit_column(folder, "observation.images.top", change)
    return Planted("corrupt_png", folder, {"bad_frame": {1}}, {0, 2})


def video_frames_missing(root: Path) -> Planted:
    """A video dataset whose last episode's camera lacks its last 4 frames (an encoder that
    stopped early): the video file has 4 frames fewer than the data has rows."""
    import av

    folder = write_lerobot_dataset(_spec("defects/video_frames", (20,) * 3, video=True), root)
    (path,) = sorted((folder / "videos").rglob("*.mp4"))
    with av.open(str(path)) as src:
        frames = [f.to_ndarray(format="rgb24") for f in src.decode(src.streams.video[0])]
    short = write_av1(np.stack(frames[:-4]), path.with_suffix(".short.mp4"), FPS)
    short.replace(path)
    return Planted("video_frames", folder, {"frame_count": {2}}, {0, 1})


WRITERS = (per_episode, dataset_wide, non_finite, schema_change, corrupt_png, video_frames_missing)


def write_all(root: Path) -> list[Planted]:
    """Every planted dataset under ``root``."""
    out = [writer(Path(root)) for writer in WRITERS]
    log.info("planted %d datasets under %s", len(out), root)
    return out
