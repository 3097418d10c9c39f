"""How TED steps map to LeRobot features, per source.

Atari: ``observation.image`` (84x84, the gray frame replicated to RGB, since LeRobot's
image writer takes uint8 images with 3 channels), ``action`` (int64 [1]), ``next.reward``
(float32 [1]), ``next.done`` (bool [1]); fps 15 (60 Hz emulator, frame skip 4); task = game.
OpenX: ``observation.images.<camera>`` (HWC uint8), ``observation.state`` and ``action``
(float32), ``next.reward``, ``next.done``; task = the language instruction; fps = the dataset's
control frequency (table in ``openx/datasets.py``, default 10).
"""

from __future__ import annotations

import numpy as np
from tensordict import TensorDictBase

from episode_warehouse.openx.datasets import CONTROL_HZ, DEFAULT_HZ

ATARI_FPS = 15


def fps_for(source: str, partition: str) -> int:
    if source == "atari":
        return ATARI_FPS
    return CONTROL_HZ.get(partition, DEFAULT_HZ)


def features_for(td: TensorDictBase, source: str, video: bool) -> dict:
    """LeRobot ``features`` for the TED ``td`` of ``source``."""
    visual = "video" if video else "image"
    feats: dict[str, dict] = {
        "next.reward": {"dtype": "float32", "shape": (1,), "names": None},
        "next.done": {"dtype": "bool", "shape": (1,), "names": None},
    }
    if source == "atari":
        h, w = td["observation"].shape[1:]
        feats["observation.image"] = {
            "dtype": visual,
            "shape": (h, w, 3),
            "names": ["height", "width", "channels"],
        }
        feats["action"] = {"dtype": "int64", "shape": (1,), "names": None}
        return feats
    for name in td["observation"].keys():  # noqa: SIM118 - TensorDict needs keys()
        value = td["observation", name]
        if value.dtype.is_floating_point or value.ndim < 4:
            feats["observation.state" if name == "state" else f"observation.{name}"] = {
                "dtype": "float32",
                "shape": tuple(value.shape[1:]) or (1,),
                "names": None,
            }
        else:
            c, h, w = value.shape[1:]
            feats[f"observation.images.{name}"] = {
                "dtype": visual,
                "shape": (h, w, c),
                "names": ["height", "width", "channels"],
            }
    feats["action"] = {
        "dtype": "float32",
        "shape": tuple(td["action"].shape[1:]) or (1,),
        "names": None,
    }
    return feats


def frames_of(td: TensorDictBase, source: str, feats: dict) -> list[dict]:
    """One LeRobot frame dict per step of ``td`` (one episode), without ``task``."""
    n = td.batch_size[0]
    cols: dict[str, np.ndarray] = {
        "next.reward": td["next", "reward"].numpy().astype(np.float32).reshape(n, 1),
        "next.done": td["next", "done"].numpy().reshape(n, 1),
    }
    if source == "atari":
        gray = td["observation"].numpy()
        cols["observation.image"] = np.repeat(gray[..., None], 3, axis=-1)
        cols["action"] = td["action"].numpy().astype(np.int64).reshape(n, 1)
    else:
        for key in feats:
            if key.startswith("observation.images."):
                chw = td["observation", key.removeprefix("observation.images.")].numpy()
                cols[key] = chw.transpose(0, 2, 3, 1)
            elif key.startswith("observation."):
                name = "state" if key == "observation.state" else key.removeprefix("observation.")
                cols[key] = td["observation", name].numpy().astype(np.float32).reshape(n, -1)
        cols["action"] = td["action"].numpy().astype(np.float32).reshape(n, -1)
    return [{k: v[i] for k, v in cols.items()} for i in range(n)]
