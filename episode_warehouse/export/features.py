"""How TED steps map to LeRobot features, per source.

Atari: ``observation.image`` (84x84, the gray frame replicated to RGB, since LeRobot's
image writer takes uint8 images with 3 channels), ``action`` (int64 [1]), ``next.reward``
(float32 [1]), ``next.done`` (bool [1]); fps 15 (60 Hz emulator, frame skip 4); task = game.
OpenX: ``observation.images.<camera>`` (HWC uint8), ``observation.state`` and ``action``
(float32), ``next.reward``, ``next.done``; task = the language instruction; fps = the dataset's
control frequency (table in ``openx/datasets.py``, default 10).
LeRobot (an imported dataset): the same names as OpenX, cameras from ``observation/image/<cam>``
and other nested observations back to dotted names (``observation/a/b`` -> ``observation.a.b``);
fps, robot type and tasks as the TED recorded them from the original ``info.json``.
"""

from __future__ import annotations

import numpy as np
import torch
from tensordict import TensorDictBase

from episode_warehouse.sources.openx.datasets import CONTROL_HZ, DEFAULT_HZ

ATARI_FPS = 15


def fps_for(source: str, partition: str, meta: dict | None = None) -> int:
    """Frames per second of a partition: what its TED recorded (LeRobot), else the source's."""
    if meta and meta.get("fps"):
        return int(meta["fps"])
    if source == "atari":
        return ATARI_FPS
    return CONTROL_HZ.get(partition, DEFAULT_HZ)


def _observations(td: TensorDictBase) -> list[tuple[tuple[str, ...], torch.Tensor]]:
    """Each observation leaf (key path under ``observation``, tensor), current frames only."""
    obs = td["observation"]
    return [((k,) if isinstance(k, str) else k, obs[k]) for k in obs.keys(True, True)]


def _feature_name(path: tuple[str, ...], image: bool) -> str:
    if image:
        return "observation.images." + path[-1]  # observation/<cam> or observation/image/<cam>
    return "observation." + ".".join(path)


def _has_reward(td: TensorDictBase) -> bool:
    """Whether the TED records rewards (LeRobot teleoperation datasets have none)."""
    return ("next", "reward") in td.keys(True, True)


def features_for(td: TensorDictBase, source: str, video: bool) -> dict:
    """LeRobot ``features`` for the TED ``td`` of ``source`` (``next.reward`` only where the
    TED has rewards: none is invented)."""
    visual = "video" if video else "image"
    feats: dict[str, dict] = {}
    if _has_reward(td):
        feats["next.reward"] = {"dtype": "float32", "shape": (1,), "names": None}
    feats["next.done"] = {"dtype": "bool", "shape": (1,), "names": None}
    if source == "atari":
        h, w = td["observation"].shape[1:]
        feats["observation.image"] = {
            "dtype": visual,
            "shape": (h, w, 3),
            "names": ["height", "width", "channels"],
        }
        feats["action"] = {"dtype": "int64", "shape": (1,), "names": None}
        return feats
    for path, value in _observations(td):
        if value.dtype.is_floating_point or value.ndim < 4:
            feats[_feature_name(path, image=False)] = {
                "dtype": "float32",
                "shape": tuple(value.shape[1:]) or (1,),
                "names": None,
            }
        else:
            c, h, w = value.shape[1:]
            feats[_feature_name(path, image=True)] = {
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


def _image_key(source: str, feature: str) -> tuple[str, str]:
    """The TED key (``observation`` or ``observation/<camera>``) and row layout of an image."""
    from episode_warehouse.export.png_writer import CHW, GRAY

    if source == "atari":
        return "observation", GRAY
    camera = feature.removeprefix("observation.images.")
    if source == "lerobot":
        return f"observation/image/{camera}", CHW
    return f"observation/{camera}", CHW


def _image_features(feats: dict) -> list[str]:
    return [k for k, ft in feats.items() if ft["dtype"] in ("image", "video")]


def image_sources(meta: dict, source: str, feats: dict) -> dict[str, tuple[str, str]]:
    """Each image feature's TED file (relative to the TED folder) and its row layout."""
    out = {}
    for key in _image_features(feats):
        ted_key, layout = _image_key(source, key)
        out[key] = (meta["keys"][ted_key]["file"], layout)
    return out


def columns_of(td: TensorDictBase, source: str, feats: dict) -> dict[str, np.ndarray]:
    """The non-image features of ``td`` (one episode) as (N, ...) arrays, keyed by feature."""
    n = td.batch_size[0]
    cols: dict[str, np.ndarray] = {}
    if "next.reward" in feats:
        cols["next.reward"] = td["next", "reward"].numpy().astype(np.float32).reshape(n, 1)
    cols["next.done"] = td["next", "done"].numpy().reshape(n, 1)
    if source == "atari":
        cols["action"] = td["action"].numpy().astype(np.int64).reshape(n, 1)
        return cols
    for key in feats:
        if key.startswith("observation.") and not key.startswith("observation.images."):
            path = tuple(key.removeprefix("observation.").split("."))
            cols[key] = td["observation", *path].numpy().astype(np.float32).reshape(n, -1)
    cols["action"] = td["action"].numpy().astype(np.float32).reshape(n, -1)
    return cols


def images_of(td: TensorDictBase, source: str, feats: dict) -> dict[str, np.ndarray]:
    """The image features of ``td`` (one episode) as (N, H, W, 3) uint8 arrays."""
    from episode_warehouse.export.png_writer import to_hwc

    out = {}
    for key in _image_features(feats):
        ted_key, layout = _image_key(source, key)
        out[key] = to_hwc(td[tuple(ted_key.split("/"))].numpy(), layout)
    return out


def frames_of(td: TensorDictBase, source: str, feats: dict) -> list[dict]:
    """One LeRobot frame dict per step of ``td`` (one episode), without ``task``."""
    cols = {**columns_of(td, source, feats), **images_of(td, source, feats)}
    return [{k: v[i] for k, v in cols.items()} for i in range(td.batch_size[0])]
