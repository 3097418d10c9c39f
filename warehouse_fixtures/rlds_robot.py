"""A small RLDS robot dataset that holds every leaf kind TFDS writes, with its ground truth.

A simulated arm moves a point towards a goal; each episode is a list of step dicts and the
values written are the values the test compares with. The features cover: Scalar and Tensor of
every numeric dtype (bool, int8 ... uint64, float16, float32, float64), a string instruction,
another text leaf, ``bytes`` and ``zlib`` tensors, a zlib tensor of dynamic shape, PNG RGB,
JPEG grey and uint16 depth images, a nested action dict, a class label, and episode metadata
(text, a ragged tensor, an id).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from warehouse_fixtures import rlds_writer as w

HEIGHT, WIDTH = 24, 32

STEP_FEATURES = {
    "observation": w.features_dict(
        {
            "image": w.image((HEIGHT, WIDTH, 3), "uint8", "png"),
            "wrist_image": w.image((HEIGHT, WIDTH, 1), "uint8", "jpeg"),
            "depth": w.image((HEIGHT, WIDTH, 1), "uint16", "png"),
            "state": w.tensor((7,), "float64"),
            "joint_pos_f16": w.tensor((2,), "float16"),
            "contact": w.tensor((), "bool"),
            "proprio_zlib": w.tensor((4,), "float32", "zlib"),
            "points": w.tensor((None, None), "float32", "zlib"),
        }
    ),
    "action": w.features_dict(
        {
            "world_vector": w.tensor((3,), "float32"),
            "gripper": w.tensor((), "uint8"),
            "mode": w.class_label(3),
            "raw_bytes": w.tensor((2,), "int16", "bytes"),
        }
    ),
    "counters": w.features_dict(
        {
            "i8": w.tensor((), "int8"),
            "i32": w.tensor((), "int32"),
            "u16": w.tensor((), "uint16"),
            "u32": w.tensor((), "uint32"),
            "u64": w.tensor((), "uint64"),
        }
    ),
    "reward": w.tensor((), "float32", scalar=True),
    "discount": w.tensor((), "float32", scalar=True),
    "is_first": w.tensor((), "bool"),
    "is_last": w.tensor((), "bool"),
    "is_terminal": w.tensor((), "bool"),
    "language_instruction": w.text(),
    "language_instruction_2": w.text(),
}
FEATURES = w.episode_features(
    STEP_FEATURES,
    episode_metadata=w.features_dict(
        {"file_path": w.text(), "success_steps": w.tensor((None,), "int64")}
    ),
    episode_id=w.tensor((), "string"),
)
TASKS = ("push the block", "open the drawer")


def episode(seed: int, length: int, *, terminal: bool) -> dict:
    """One episode: ``length`` steps of a point moving to a goal; its ends per ``terminal``."""
    rng = np.random.default_rng(seed)
    goal = rng.uniform(-1, 1, 3)
    pos = rng.uniform(-1, 1, 3)
    steps = []
    n_points = 3  # declared (-1, -1): its shape is stored per step; one per dataset for a TED
    for t in range(length):
        action = np.clip(goal - pos, -0.3, 0.3).astype(np.float32)
        pos = pos + action
        reward = float(-np.linalg.norm(goal - pos))
        shade = int(255 * t / max(1, length - 1))
        image = np.zeros((HEIGHT, WIDTH, 3), np.uint8)
        image[..., 0] = shade
        image[: HEIGHT // 2, :, 1] = rng.integers(0, 256, (HEIGHT // 2, WIDTH), dtype=np.uint8)
        steps.append(
            {
                "observation": {
                    "image": image,
                    "wrist_image": np.full((HEIGHT, WIDTH, 1), shade, np.uint8),
                    "depth": rng.integers(0, 65535, (HEIGHT, WIDTH, 1), dtype=np.uint16),
                    "state": np.concatenate([pos, goal, [t / 10.0]]).astype(np.float64),
                    "joint_pos_f16": rng.normal(size=2).astype(np.float16),
                    "contact": bool(t % 3 == 0),
                    "proprio_zlib": rng.normal(size=4).astype(np.float32),
                    "points": rng.normal(size=(n_points, 3)).astype(np.float32),
                },
                "action": {
                    "world_vector": action,
                    "gripper": np.uint8(200 + t % 50),
                    "mode": t % 3,
                    "raw_bytes": np.array([-(t + 1), 300 + t], np.int16),
                },
                "counters": {
                    "i8": np.int8(-100 + t),
                    "i32": np.int32(-(2**30) + t),
                    "u16": np.uint16(60000 + t),
                    "u32": np.uint32(4_000_000_000 + t),
                    "u64": np.uint64(2**63 + 12345 + t),
                },
                "reward": np.float32(reward),
                "discount": np.float32(0.0 if (terminal and t == length - 1) else 1.0),
                "is_first": t == 0,
                "is_last": t == length - 1,
                "is_terminal": terminal and t == length - 1,
                # episode 2 changes its instruction half way: task_index is per step
                "language_instruction": TASKS[(seed + (seed == 2 and t >= 3)) % 2],
                "language_instruction_2": f"variant {seed % 2}",
            }
        )
    return {
        "steps": steps,
        "episode_metadata": {
            "file_path": f"/data/robot/episode_{seed:04d}.h5",
            "success_steps": np.arange(seed % 4, dtype=np.int64),
        },
        "episode_id": f"ep-{seed}",
    }


def write_robot_dataset(
    root: Path,
    name: str = "toy_robot",
    version: str = "1.0.0",
    *,
    shards: dict[str, list[list[tuple[int, int, bool]]]] | None = None,
    gzipped: bool = False,
) -> tuple[Path, dict[str, list[list[dict]]]]:
    """Write the dataset; ``shards[split]`` lists each shard's episodes as (seed, length,
    terminal). Returns the version folder and the episodes written, by split and shard."""
    shards = shards or {
        "train": [[(0, 5, True), (1, 4, False)], [(2, 6, True)]],
        "val": [[(3, 3, True)]],
    }
    episodes = {
        split: [[episode(seed, n, terminal=term) for seed, n, term in shard] for shard in parts]
        for split, parts in shards.items()
    }
    folder = w.write_dataset(root, name, version, FEATURES, episodes, gzipped=gzipped)
    return folder, episodes
