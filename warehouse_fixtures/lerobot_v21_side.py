"""LeRobot v2.1 datasets written and read by lerobot 0.3.3 itself, in its side environment
(``scripts/side_env.sh lerobot-0.3.3``): never imported by the project, run as a script.

    python lerobot_v21_side.py write OUT --repo-id owner/name [--video] [--lengths 12,9,15]
    python lerobot_v21_side.py read ROOT --repo-id owner/name OUT.npz

``write``: a dataset through ``LeRobotDataset.create`` / ``add_frame`` / ``save_episode`` (the
path lerobot-record takes): one camera (``observation.images.top``, image or AV1 video), a
4-D ``observation.state``, a 2-D ``action``, ``next.reward``, ``next.done``, two tasks
alternating by episode. Values are a function of (episode, frame), pixels a seeded noise.

``read``: every frame as lerobot 0.3.3's ``LeRobotDataset`` returns it, saved as arrays (the
camera as uint8 = round(float * 255)), tasks as a JSON list.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

TASKS = ("pick the cube", "place the cube on the plate")
HEIGHT, WIDTH = 64, 96  # SVT-AV1 refuses frames under 64 pixels a side


def _features(video: bool) -> dict:
    return {
        "observation.images.top": {
            "dtype": "video" if video else "image",
            "shape": (HEIGHT, WIDTH, 3),
            "names": ["height", "width", "channels"],
        },
        "observation.state": {"dtype": "float32", "shape": (4,), "names": ["j0", "j1", "j2", "g"]},
        "action": {"dtype": "float32", "shape": (2,), "names": ["vx", "vy"]},
        "next.reward": {"dtype": "float32", "shape": (1,), "names": None},
        "next.done": {"dtype": "bool", "shape": (1,), "names": None},
    }


def _frame(episode: int, t: int, n: int, rng: np.random.Generator) -> dict:
    phase = episode + t / 10.0
    return {
        "observation.images.top": rng.integers(0, 256, (HEIGHT, WIDTH, 3), dtype=np.uint8),
        "observation.state": np.array(
            [np.sin(phase), np.cos(phase), phase / 7.0, float(t % 3 == 0)], np.float32
        ),
        "action": np.array([np.cos(phase) * 0.5, t / n], np.float32),
        "next.reward": np.array([1.0 if t == n - 1 else 0.0], np.float32),
        "next.done": np.array([t == n - 1], bool),
    }


def write(out: Path, repo_id: str, video: bool, lengths: list[int]) -> None:
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    ds = LeRobotDataset.create(
        repo_id, fps=10, features=_features(video), root=out, robot_type="so100",
        use_videos=video,
    )  # fmt: skip
    rng = np.random.default_rng(7)
    for e, n in enumerate(lengths):
        for t in range(n):
            ds.add_frame(_frame(e, t, n, rng), task=TASKS[e % len(TASKS)])
        ds.save_episode()


def read(root: Path, repo_id: str, out: Path) -> None:
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    ds = LeRobotDataset(repo_id, root=root)
    arrays: dict[str, list] = {}
    tasks = []
    for i in range(len(ds)):
        item = ds[i]
        for key, value in item.items():
            if key == "task":
                tasks.append(value)
                continue
            v = value.numpy()
            if key.startswith("observation.images."):  # CHW float [0, 1] -> HWC uint8
                v = np.round(v.transpose(1, 2, 0) * 255).astype(np.uint8)
            arrays.setdefault(key, []).append(v)
    payload: dict[str, Any] = {k: np.stack(v) for k, v in arrays.items()}
    np.savez(out, tasks=np.array(json.dumps(tasks)), **payload)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("command", choices=("write", "read"))
    p.add_argument("root", type=Path)
    p.add_argument("out", type=Path, nargs="?")
    p.add_argument("--repo-id", required=True)
    p.add_argument("--video", action="store_true")
    p.add_argument("--lengths", default="12,9,15")
    args = p.parse_args()
    if args.command == "write":
        write(args.root, args.repo_id, args.video, [int(n) for n in args.lengths.split(",")])
    else:
        read(args.root, args.repo_id, args.out)


if __name__ == "__main__":
    main()
