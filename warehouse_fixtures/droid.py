"""A DROID 1.0.1 folder in miniature: its RLDS schema as published, many shards, JPEG cameras.

The feature tree follows DROID's schema page (droid-dataset.github.io, "Dataset Schema") and the
fields lerobot's ``examples/port_datasets/port_droid.py`` reads from the RLDS release: three
180x320 JPEG cameras, ``action`` (7), ``action_dict`` (cartesian position and velocity, gripper
position and velocity, joint position and velocity), the observation's cartesian, gripper and
joint positions, three language instructions, and ``episode_metadata`` (file path, recording
folder, building, collector, date, three camera extrinsics). Numbers are float64 as published.

What the values mean here (ground truth the tests compare with):
- ``action`` is the cartesian velocity (6) and the gripper position (1). The schema page calls
  its first six "joint velocities"; a Franka has seven joints, and lerobot names the axes
  x, y, z, roll, pitch, yaw, so the fixture writes what the names say (docs/droid.md).
- ``action_dict/joint_velocity`` moves in segments and holds still in others, so openpi's idle
  filter has idle runs shorter and longer than 7 steps and moving runs shorter and longer than
  16 (``EPISODE_PLANS``).
- success is ``"/success/" in file_path`` (DROID's own rlds_utils); failures sit under
  ``/failure/``.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from warehouse_fixtures import rlds_writer as w

NAME, VERSION = "droid", "1.0.1"
HEIGHT, WIDTH = 180, 320
CAMERAS = ("exterior_image_1_left", "exterior_image_2_left", "wrist_image_left")
BUILDINGS = ("AUTOLab", "ILIAD", "IRIS", "RAIL", "REAL", "TRI")

_F64 = "float64"


def features(height: int = HEIGHT, width: int = WIDTH) -> dict:
    """DROID's features.json with cameras of ``height`` x ``width`` (published: 180 x 320)."""
    return w.episode_features(
        step_features(height, width), episode_metadata=w.features_dict(EPISODE_METADATA)
    )


def step_features(height: int = HEIGHT, width: int = WIDTH) -> dict:
    return {
        "observation": w.features_dict(
            {
                **{camera: w.image((height, width, 3), "uint8", "jpeg") for camera in CAMERAS},
                **OBSERVATION,
            }
        ),
        **STEP_LEAVES,
    }


OBSERVATION = {
    "cartesian_position": w.tensor((6,), _F64),
    "gripper_position": w.tensor((1,), _F64),
    "joint_position": w.tensor((7,), _F64),
}
STEP_LEAVES = {
    "action": w.tensor((7,), _F64),
    "action_dict": w.features_dict(
        {
            "cartesian_position": w.tensor((6,), _F64),
            "cartesian_velocity": w.tensor((6,), _F64),
            "gripper_position": w.tensor((1,), _F64),
            "gripper_velocity": w.tensor((1,), _F64),
            "joint_position": w.tensor((7,), _F64),
            "joint_velocity": w.tensor((7,), _F64),
        }
    ),
    "discount": w.tensor((), "float32", scalar=True),
    "reward": w.tensor((), "float32", scalar=True),
    "is_first": w.tensor((), "bool"),
    "is_last": w.tensor((), "bool"),
    "is_terminal": w.tensor((), "bool"),
    "language_instruction": w.text(),
    "language_instruction_2": w.text(),
    "language_instruction_3": w.text(),
}
EPISODE_METADATA = {
    "file_path": w.text(),
    "recording_folderpath": w.text(),
    "building": w.text(),
    "collector_id": w.text(),
    "date": w.text(),
    "extrinsics_wrist_cam": w.tensor((6,), _F64),
    "extrinsics_exterior_cam_1": w.tensor((6,), _F64),
    "extrinsics_exterior_cam_2": w.tensor((6,), _F64),
}
FEATURES = features()
TASKS = (
    ("put the marker in the cup", "place the marker into the mug", "marker in cup"),
    ("open the drawer", "pull the drawer open", "drawer open"),
    ("wipe the table", "clean the table with the cloth", "wipe"),
)
# Segments of (moving?, steps): idle runs of 3 (kept) and 9 (dropped), a moving run of 10
# between two long idles (dropped: shorter than 16), and moving runs of 20+.
EPISODE_PLANS = (
    ((True, 24), (False, 9), (True, 20)),
    ((False, 8), (True, 18), (False, 3), (True, 10), (False, 12), (True, 10), (False, 7)),
    ((True, 40),),
    ((False, 30),),
    ((True, 16), (False, 7), (True, 15), (False, 6), (True, 17)),
)


@dataclass(frozen=True)
class DroidEpisode:
    """What one written episode holds (the tests' ground truth)."""

    seed: int
    success: bool
    building: str
    collector_id: str
    date: str
    file_path: str
    recording_folderpath: str
    instructions: tuple[str, str, str]
    joint_velocity: np.ndarray  # [T, 7]
    record: dict  # the step and episode values as written


@functools.cache
def _grid(height: int, width: int) -> np.ndarray:
    return np.mgrid[0:height, 0:width].astype(np.uint16)


def _frame(rng: np.random.Generator, t: int, camera: int, size: tuple[int, int]) -> np.ndarray:
    """A smooth scene with texture (JPEG sizes like DROID's: ~10-20 KB at 180x320)."""
    y, x = _grid(*size)
    base = (x * (1 + camera) + y * 2 + t * 7) % 256
    image = np.stack([base, (base + 85 * camera) % 256, (255 - base) % 256], axis=-1)
    noise = rng.integers(0, 24, (*size, 3), dtype=np.uint8)
    return np.minimum(image.astype(np.uint16) + noise, 255).astype(np.uint8)


def _plan(seed: int, length: int | None) -> tuple[tuple[bool, int], ...]:
    """``EPISODE_PLANS[seed % 5]``, repeated and cut to ``length`` steps when one is given."""
    plan = EPISODE_PLANS[seed % len(EPISODE_PLANS)]
    if length is None:
        return plan
    out, left = [], length
    while left > 0:
        for moving, steps in plan:
            out.append((moving, min(steps, left)))
            left -= out[-1][1]
            if left <= 0:
                break
    return tuple(out)


def _joint_velocity(rng: np.random.Generator, plan) -> np.ndarray:
    rows, current = [], rng.normal(0, 0.5, 7)
    for moving, steps in plan:
        for _ in range(steps):
            if moving:
                current = current + rng.uniform(0.01, 0.1, 7) * rng.choice([-1, 1], 7)
            rows.append(current.copy())
    return np.array(rows, np.float64)


def droid_episode(
    seed: int,
    *,
    images: bool = True,
    size: tuple[int, int] = (HEIGHT, WIDTH),
    length: int | None = None,
    success: bool | None = None,
) -> DroidEpisode:
    """Episode ``seed``: its plan is ``EPISODE_PLANS[seed % 5]`` (repeated to ``length`` steps
    when one is given); every third fails unless ``success`` says. Cameras are ``size``."""
    rng = np.random.default_rng(seed)
    jv = _joint_velocity(rng, _plan(seed, length))
    length = len(jv)
    success = seed % 3 != 2 if success is None else success
    building = BUILDINGS[seed % len(BUILDINGS)]
    date = f"2023-0{1 + seed % 9}-{10 + seed % 18:02d}"
    folder = f"gs://xembodiment_data/r2d2/r2d2-data-full/{building}/{'success' if success else 'failure'}/{date}/Fri_Jul__7_09:{seed % 60:02d}:23_2023"  # noqa: E501
    instructions = TASKS[seed % len(TASKS)]
    jp = np.cumsum(jv, axis=0) / 15.0
    cart_pos = np.concatenate([np.cumsum(rng.normal(0, 0.01, (length, 3)), 0),
                               rng.uniform(-np.pi, np.pi, (length, 3))], axis=1)  # fmt: skip
    cart_vel = rng.normal(0, 0.3, (length, 6))
    gripper = np.clip(np.linspace(0, 1, length) + rng.normal(0, 0.01, length), 0, 1)[:, None]
    gripper_vel = np.diff(gripper, axis=0, prepend=gripper[:1])
    steps = []
    for t in range(length):
        observation = {
            "cartesian_position": cart_pos[t],
            "gripper_position": gripper[t],
            "joint_position": jp[t],
        }
        for i, camera in enumerate(CAMERAS):
            observation[camera] = (
                _frame(rng, t, i, size) if images else np.zeros((*size, 3), np.uint8)
            )
        steps.append(
            {
                "observation": observation,
                "action": np.concatenate([cart_vel[t], gripper[t]]),
                "action_dict": {
                    "cartesian_position": cart_pos[t],
                    "cartesian_velocity": cart_vel[t],
                    "gripper_position": gripper[t],
                    "gripper_velocity": gripper_vel[t],
                    "joint_position": jp[t],
                    "joint_velocity": jv[t],
                },
                "discount": np.float32(1.0),
                "reward": np.float32(1.0 if (success and t == length - 1) else 0.0),
                "is_first": t == 0,
                "is_last": t == length - 1,
                "is_terminal": t == length - 1,
                "language_instruction": instructions[0],
                "language_instruction_2": instructions[1],
                "language_instruction_3": instructions[2],
            }
        )
    collector = f"{seed * 2654435761 % 2**32:08x}"
    metadata: dict[str, Any] = {
        "file_path": f"{folder}/trajectory.h5",
        "recording_folderpath": f"{folder}/recordings/MP4",
        "building": building,
        "collector_id": collector,
        "date": date,
        "extrinsics_wrist_cam": rng.normal(0, 1, 6),
        "extrinsics_exterior_cam_1": rng.normal(0, 1, 6),
        "extrinsics_exterior_cam_2": rng.normal(0, 1, 6),
    }
    return DroidEpisode(
        seed, success, building, collector, date, metadata["file_path"],
        metadata["recording_folderpath"], instructions, jv,
        {"steps": steps, "episode_metadata": metadata},
    )  # fmt: skip


def write_droid(
    root: Path, shards: int = 8, per_shard: int = 2, *, first_seed: int = 0, keep: bool = True
) -> tuple[Path, list[list[DroidEpisode]]]:
    """``root/droid/1.0.1/``: ``shards`` TFRecord shards of ``per_shard`` episodes each (one
    split, ``train``, as DROID publishes), written one episode at a time. Returns the folder
    and the episodes by shard; with ``keep=False`` their ``record`` is dropped once written
    (a benchmark's hundreds of episodes hold gigabytes of pixels)."""
    written: list[list[DroidEpisode]] = [[] for _ in range(shards)]

    def shard(s: int):
        for i in range(per_shard):
            episode = droid_episode(first_seed + s * per_shard + i)
            yield episode.record
            written[s].append(episode if keep else replace(episode, record={}))

    folder = w.write_dataset(Path(root), NAME, VERSION, FEATURES, {"train": _Shards(shards, shard)})
    return folder, written


class _Shards(Sequence):
    """``total`` shards, each made when it is taken (``make(index)``: the shard's episodes)."""

    def __init__(self, total: int, make) -> None:
        self.total, self.make = total, make

    def __len__(self) -> int:
        return self.total

    def __getitem__(self, index):
        if not isinstance(index, int) or not 0 <= index < self.total:
            raise IndexError(index)
        return self.make(index)
