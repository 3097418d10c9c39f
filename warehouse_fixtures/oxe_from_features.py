"""Episodes for a real OXE ``features.json``: every leaf it declares, filled with values of its
declared shape and dtype, so a fixture folder has exactly the published dataset's feature tree.

Values are seeded noise, except where a test needs a known sequence: ``overrides`` maps a step
leaf's path (``"action/gripper_closedness_action"``) to a function ``(t, length) -> value``.
With ``learnable=True`` every float step tensor is instead a smooth function of the episode's
phase (``t / (length - 1)``): states and actions then move together, so a policy trained on
them has something to learn (its loss falls), which noise never gives.
Images have their declared size (readers check it) and cheap content: a seeded shade plus a
gradient, which PNG compresses to a few KB even at 640x512.

The values follow the features' declaration only (TFDS's feature connectors), never the
project's reader or the standardization code.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np

from warehouse_fixtures import rlds_writer as w

Override = Callable[[int, int], object]


def _kind(node: dict) -> str:
    return node["pythonClassName"].rsplit(".", 1)[-1]


def _dims(node: dict) -> list[int]:
    content = node.get("tensor") or node.get("image") or {}
    return [int(d) for d in (content.get("shape") or {}).get("dimensions", [])]


def _leaf(node: dict, rng: np.random.Generator, text: str):
    kind = _kind(node)
    if kind == "Image":
        h, w_, c = _dims(node)
        dtype = node["image"].get("dtype", "uint8")
        shade = int(rng.integers(0, 200))
        ramp = (np.arange(w_) * 50 // max(w_, 1))[None, :, None]
        if dtype == "float32":  # a depth map in metres: a plane tilted along the width
            depth = 0.5 + shade / 100 + np.arange(w_, dtype=np.float32)[None, :, None] / 997
            return np.ascontiguousarray(np.broadcast_to(depth, (h, w_, c)), dtype=np.float32)
        pixels = np.broadcast_to(shade + ramp, (h, w_, c))
        return np.ascontiguousarray(pixels).astype(dtype)
    if kind == "Text":
        return text
    if kind == "ClassLabel":
        return int(rng.integers(0, int(node["classLabel"].get("numClasses", 2))))
    spec = node["tensor"]
    dtype = spec["dtype"]
    shape = [d if d >= 0 else 2 for d in _dims(node)]
    if dtype == "string":
        return text
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.startswith("float"):
        return rng.normal(0, 1, shape).astype(dtype)
    return rng.integers(0, 50, shape).astype(dtype)


def smooth(path: str, shape: list[int], t: int, length: int, dtype: str) -> np.ndarray:
    """A float leaf's value at step ``t`` as a smooth function of the phase ``t/(length-1)``:
    element k is ``sin(2 pi phase f + c)`` (``cos`` for actions), its frequency f (1 to 3) and
    offset c fixed by the path's crc32 and k."""
    phase = t / max(length - 1, 1)
    size = int(np.prod(shape, dtype=np.int64)) if shape else 1
    k = np.arange(size) + zlib.crc32(path.encode()) % 7
    wave = np.cos if path.startswith("action") else np.sin
    values = wave(2 * np.pi * phase * (1 + k % 3) + k)
    return values.reshape(shape).astype(dtype) if shape else np.asarray(values[0], dtype)


def _fill(node, path, t, length, rng, overrides, text, learnable=False):
    if _kind(node) == "FeaturesDict":
        return {
            name: _fill(
                child,
                f"{path}/{name}" if path else name,
                t,
                length,
                rng,
                overrides,
                text,
                learnable,
            )  # fmt: skip
            for name, child in node["featuresDict"]["features"].items()
        }
    if path in overrides:
        dtype = (node.get("tensor") or {}).get("dtype")
        value = overrides[path](t, length)
        return np.asarray(value, dtype=dtype) if dtype and dtype != "string" else value
    spec = node.get("tensor") or {}
    if (
        learnable
        and _kind(node) in ("Tensor", "Scalar")
        and str(spec.get("dtype")).startswith("float")
    ):
        return smooth(path, [d if d >= 0 else 2 for d in _dims(node)], t, length, spec["dtype"])
    return _leaf(node, rng, text)


def episode(
    features: dict,
    length: int,
    seed: int,
    *,
    overrides: dict[str, Override] | None = None,
    instruction: str = "pick up the block",
    learnable: bool = False,
) -> dict:
    """One episode of ``length`` steps for ``features`` (the root FeaturesDict)."""
    rng = np.random.default_rng(seed)
    overrides = dict(overrides or {})
    boundaries: dict[str, Override] = {
        "is_first": lambda t, n: t == 0,
        "is_last": lambda t, n: t == n - 1,
        "is_terminal": lambda t, n: t == n - 1,
    }
    for key, fn in boundaries.items():
        overrides.setdefault(key, fn)
    root = features["featuresDict"]["features"]
    out: dict = {}
    for name, child in root.items():
        if _kind(child) == "Dataset":
            step = child["sequence"]["feature"]
            out[name] = [
                _fill(step, "", t, length, rng, overrides, instruction, learnable)
                for t in range(length)
            ]
        else:
            out[name] = _fill(child, name, 0, 1, rng, {}, instruction)
    return out


def write_from_features(
    root: Path,
    name: str,
    features_path: Path,
    lengths: list[int],
    *,
    version: str = "0.1.0",
    overrides: dict[str, Override] | None = None,
    instructions: list[str] | None = None,
    drop: tuple[str, ...] = (),
    learnable: bool = False,
) -> tuple[Path, list[dict]]:
    """Write ``root/name/version/`` with one train shard of episodes of ``lengths``, using the
    published ``features.json`` as is but for the step features in ``drop`` (paths such as
    ``"observation/image_with_depth"``). Returns the folder and the episodes written."""
    features = json.loads(Path(features_path).read_text())
    for path in drop:
        node = features["featuresDict"]["features"]["steps"]["sequence"]["feature"]
        *parents, leaf = path.split("/")
        for part in parents:
            node = node["featuresDict"]["features"][part]
        del node["featuresDict"]["features"][leaf]
    episodes = [
        episode(
            features,
            n,
            seed=i,
            overrides=overrides,
            instruction=(instructions or ["pick up the block"])[i % len(instructions or [1])],
            learnable=learnable,
        )
        for i, n in enumerate(lengths)
    ]
    folder = w.write_dataset(root, name, version, features, {"train": [episodes]})
    return folder, episodes
