"""How TED steps map to LeRobot features, for every source alike, from what the TED holds.

- ``observation`` leaves: an integer ``(N, C, H, W)`` leaf is a camera,
  ``observation.images.<last key>`` (HWC uint8); a bare integer ``(N, H, W)`` observation is one
  grey camera, ``observation.image`` (replicated to RGB: LeRobot's image writer takes three
  channels); every other leaf is a float32 state, ``observation.<key path, dotted>``
  (``observation.state`` for a bare vector).
- ``observation.state``: every export has one where the TED has a state at all (LeRobot's ACT
  and Diffusion read it): the source's own where it has a single state (a bare vector, a leaf
  named ``state``), else the source's state leaves concatenated in key order, float32, with
  ``names`` saying which dimension is which (``joint_pos_0`` ...); the leaves stay beside it.
  Text embeddings are not state and stay out of it. (Octo's proprio encodings per OXE dataset
  are the standardized export's ``observation.state``: docs/standardized.md.)
- ``action``: int64 for integer actions (Atari's), else float32, shape ``(D,)`` or ``(1,)``.
- ``next.reward`` (float32 ``[1]``) only where the TED has rewards (none is invented),
  ``next.done`` (bool ``[1]``).
- every other per-step key of the TED, under its key path dotted as LeRobot names nested keys
  (DROID's ``action_dict.joint_velocity``, RLDS's ``discount``): float32, int64 or bool as the
  TED holds it; a text leaf (an index into the TED's ``texts``, DROID's
  ``language_instruction_2``) as a ``string`` feature holding the text. The TED's own
  bookkeeping (``episode``, ``is_init``, ``task_index``, root ``done``/``terminated``/
  ``truncated``, ``next`` but reward and done) is what LeRobot keeps in its own columns.

So Atari exports ``observation.image`` and an int64 ``action``; OpenX ``observation.images.<cam>``
from ``observation/<cam>``; an imported LeRobot dataset its cameras from
``observation/image/<cam>`` and nested observations back to dotted names. fps and the task string
come from the source registry (:mod:`episode_warehouse.sources.registry`).
"""

from __future__ import annotations

import numpy as np
import torch
from tensordict import TensorDictBase

from episode_warehouse.decoded.format import CHW, DEPTH
from episode_warehouse.export.png_writer import to_hwc
from episode_warehouse.ted.cameras import declared_images, image_layout, observation_leaves
from episode_warehouse.ted.layout import END_FLAGS, IDS, SOURCE_IDS
from episode_warehouse.ted.record import TedRecord

Path_ = tuple[str, ...]
DEPTH_NAMES = ["depth", "height", "width"]  # a depth camera's float32 feature


def _feature_name(path: Path_, image: bool) -> str:
    if image:
        return "observation.images." + path[-1] if path else "observation.image"
    return "observation." + (".".join(path) or "state")


def _has_reward(td: TensorDictBase) -> bool:
    """Whether the TED records rewards (LeRobot teleoperation datasets have none)."""
    return ("next", "reward") in td.keys(True, True)


def _images(td: TensorDictBase, declared: dict | None) -> dict[str, tuple[Path_, str]]:
    """Each image feature's TED key path under ``observation`` and its row layout."""
    out = {}
    for path, value in observation_leaves(td):
        layout = image_layout(path, value, declared)
        if layout not in (None, DEPTH):
            out[_feature_name(path, image=True)] = (path, layout)
    return out


# the TED's own bookkeeping, and the columns LeRobot computes itself (its default features)
_BOOKKEEPING = frozenset(IDS + END_FLAGS + SOURCE_IDS + ("timestamp",))


def _extra_leaves(td: TensorDictBase) -> list[tuple[Path_, torch.Tensor]]:
    """The per-step keys beyond observations, actions, rewards and the TED's bookkeeping."""
    out = []
    for key in td.keys(True, True):
        path = (key,) if isinstance(key, str) else tuple(key)
        if path[0] in ("observation", "action", "next") or path in {(k,) for k in _BOOKKEEPING}:
            continue
        out.append((path, td.get(key)))
    return sorted(out, key=lambda item: item[0])


def _extra_feature(path: Path_, value: torch.Tensor, texts: dict) -> dict:
    name = "/".join(path)
    if name in texts:
        return {"dtype": "string", "shape": (1,), "names": None}
    dtype = (
        "bool"
        if value.dtype == torch.bool
        else "float32"
        if value.dtype.is_floating_point
        else "int64"
    )
    return {"dtype": dtype, "shape": tuple(value.shape[1:]) or (1,), "names": None}


def features_for(
    td: TensorDictBase,
    video: bool,
    source: dict | None = None,
    images: dict | None = None,
    texts: dict | None = None,
) -> dict:
    """LeRobot ``features`` for the TED ``td``. ``source``: a LeRobot source's own features and
    their ``names`` (the TED record's ``feature_names``): their names are written again, and
    ``next.done`` only where the source had it (a teleoperation recording has none).
    ``images``: the cameras the decoder declared (:func:`declared_images`); ``texts``: the
    TED's text leaves (its record's ``extra["texts"]``), exported as their strings."""
    feats = _features(td, video, images)
    for path, value in _extra_leaves(td):
        feats.setdefault(".".join(path), _extra_feature(path, value, texts or {}))
    if source is None:
        return feats
    if "next.done" not in source:
        del feats["next.done"]
    for key, names in source.items():
        if key in feats and names is not None and feats[key]["dtype"] not in ("image", "video"):
            feats[key]["names"] = names
    return feats


def _features(td: TensorDictBase, video: bool, declared: dict | None) -> dict:
    visual = "video" if video else "image"
    feats: dict[str, dict] = {}
    if _has_reward(td):
        feats["next.reward"] = {"dtype": "float32", "shape": (1,), "names": None}
    feats["next.done"] = {"dtype": "bool", "shape": (1,), "names": None}
    for path, value in observation_leaves(td):
        layout = image_layout(path, value, declared)
        if layout in (None, DEPTH):  # a depth camera keeps its values: float32, named so
            feats[_feature_name(path, image=False)] = {
                "dtype": "float32",
                "shape": tuple(value.shape[1:]) or (1,),
                "names": DEPTH_NAMES if layout == DEPTH else None,
            }
            continue
        h, w = value.shape[-2:]
        c = value.shape[1] if layout == CHW and value.shape[1] != 1 else 3
        feats[_feature_name(path, image=True)] = {
            "dtype": visual,
            "shape": (h, w, c),
            "names": ["height", "width", "channels"],
        }
    _add_state(td, feats)
    leaves = _action_leaves(td)
    if len(leaves) == 1 and not leaves[0][1].dtype.is_floating_point:
        feats["action"] = {"dtype": "int64", "shape": tuple(leaves[0][1].shape[1:]) or (1,),
                           "names": None}  # fmt: skip
        return feats
    names = [
        ".".join(path) + (f"_{i}" if int(np.prod(v.shape[1:])) > 1 else "")
        for path, v in leaves
        for i in range(int(np.prod(v.shape[1:])))
    ]
    feats["action"] = {
        "dtype": "float32",
        "shape": (len(names),),
        "names": names if len(leaves) > 1 else None,
    }
    return feats


STATE = "observation.state"


def _state_leaves(td: TensorDictBase, feats: dict) -> list[tuple[Path_, torch.Tensor]]:
    """The observation leaves that make a state: float32 features, no depth image, no text
    embedding (RT-1's ``natural_language_embedding`` is an instruction's encoding, 512 numbers
    that describe the task, not the robot)."""
    out = []
    for path, value in observation_leaves(td):
        feature = feats.get(_feature_name(path, image=False))
        if feature is None or feature["dtype"] != "float32" or feature["names"] == DEPTH_NAMES:
            continue
        if path and "embedding" in path[-1]:
            continue
        out.append((path, value))
    return out


def _dim_names(path: Path_, value: torch.Tensor) -> list[str]:
    name = ".".join(path) or "state"
    size = int(np.prod(value.shape[1:]))
    return [name] if size == 1 and value.ndim <= 2 else [f"{name}_{i}" for i in range(size)]


def _add_state(td: TensorDictBase, feats: dict) -> None:
    """``observation.state`` as the concatenated state leaves, where the TED has no single one."""
    if STATE in feats:
        return
    leaves = _state_leaves(td, feats)
    if not leaves:  # cameras only (Atari): there is no state to give
        return
    names = [n for path, value in leaves for n in _dim_names(path, value)]
    feats[STATE] = {"dtype": "float32", "shape": (len(names),), "names": names}


def _state_column(td: TensorDictBase, feats: dict) -> np.ndarray:
    n = td.batch_size[0]
    parts = [v.numpy().astype(np.float32).reshape(n, -1) for _, v in _state_leaves(td, feats)]
    return np.concatenate(parts, axis=1)


def _action_leaves(td: TensorDictBase) -> list[tuple[Path_, torch.Tensor]]:
    """The action's leaves in key order: one tensor, or a dict action's (RLDS ``action/*``),
    which LeRobot gets concatenated into one float32 vector (its ``names`` say which is which)."""
    action = td["action"]
    if isinstance(action, torch.Tensor):
        return [((), action)]
    keys = sorted((k,) if isinstance(k, str) else k for k in action.keys(True, True))
    return [(k, action[k]) for k in keys]


def image_sources(meta: TedRecord, td: TensorDictBase, feats: dict) -> dict[str, tuple[str, str]]:
    """Each image feature's TED file (relative to the TED folder) and its row layout."""
    images = _images(td, declared_images(meta))
    out = {}
    for key, ft in feats.items():
        if ft["dtype"] in ("image", "video"):
            path, layout = images[key]
            out[key] = (meta.keys["/".join(("observation", *path))]["file"], layout)
    return out


def columns_of(td: TensorDictBase, feats: dict, texts: dict | None = None) -> dict[str, np.ndarray]:
    """The non-image features of ``td`` (one episode) as (N, ...) arrays, keyed by feature;
    ``texts``: the episode's TED's text tables (a text leaf's indices become its strings)."""
    n = td.batch_size[0]
    cols: dict[str, np.ndarray] = {}
    for path, value in _extra_leaves(td):
        key = ".".join(path)
        feature = feats.get(key)
        if feature is None:
            continue
        if feature["dtype"] == "string":
            table = np.asarray((texts or {})["/".join(path)], dtype=object)
            cols[key] = table[value.numpy().astype(np.int64).reshape(n)]
        else:
            dtype = np.dtype(feature["dtype"])
            cols[key] = value.numpy().astype(dtype).reshape(n, *feature["shape"])
    if "next.reward" in feats:
        cols["next.reward"] = td["next", "reward"].numpy().astype(np.float32).reshape(n, 1)
    if "next.done" in feats:
        cols["next.done"] = td["next", "done"].numpy().reshape(n, 1)
    for path, value in observation_leaves(td):
        key = _feature_name(path, image=False)
        if key in feats and feats[key]["dtype"] not in ("image", "video"):
            cols[key] = value.numpy().astype(np.float32).reshape(n, *feats[key]["shape"])
    if STATE in feats and STATE not in cols:
        cols[STATE] = _state_column(td, feats)
    dtype = np.int64 if feats["action"]["dtype"] == "int64" else np.float32
    cols["action"] = np.concatenate(
        [v.numpy().astype(dtype).reshape(n, -1) for _, v in _action_leaves(td)], axis=1
    )
    return cols


def images_of(
    td: TensorDictBase, feats: dict, declared: dict | None = None
) -> dict[str, np.ndarray]:
    """The image features of ``td`` (one episode) as (N, H, W, 3) uint8 arrays."""
    images = _images(td, declared)
    out = {}
    for key, ft in feats.items():
        if ft["dtype"] in ("image", "video"):
            path, layout = images[key]
            out[key] = to_hwc(td["observation", *path].numpy(), layout)
    return out


def frames_of(
    td: TensorDictBase, feats: dict, declared: dict | None = None, texts: dict | None = None
) -> list[dict]:
    """One LeRobot frame dict per step of ``td`` (one episode), without ``task``."""
    cols = {**columns_of(td, feats, texts), **images_of(td, feats, declared)}
    return [{k: v[i] for k, v in cols.items()} for i in range(td.batch_size[0])]
