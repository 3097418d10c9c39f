"""What an export writes for each episode, decided once per export: its LeRobot features, fps and
robot type, and where each feature's values come from.

Two rules, one interface (:class:`ExportSchema`): a dataset LeRobot has ported itself follows the
port (:mod:`episode_warehouse.export.ports`); every other one the generic rule of
:mod:`episode_warehouse.export.features`. The writers (the fast path, the per-frame path, the PNG
jobs) ask the schema and never choose between the two.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from tensordict import TensorDictBase

from episode_warehouse.decoded.format import DEPTH
from episode_warehouse.errors import ExportError
from episode_warehouse.export import features as generic
from episode_warehouse.export.episodes import ExportEpisode
from episode_warehouse.export.png_writer import to_hwc
from episode_warehouse.export.ports import Camera, EpisodeValue, Port, Steps, Text, port_of
from episode_warehouse.ted.cameras import declared_images, image_layout


@dataclass(frozen=True)
class ExportSchema:
    features: dict
    fps: int
    robot_type: str
    port: Port | None = None

    def columns(self, episode: ExportEpisode, steps: TensorDictBase | None = None) -> dict:
        """The non-image features of ``episode`` (or of its rows ``steps``) as (N, ...) arrays."""
        steps = episode.steps() if steps is None else steps
        texts = episode.meta.extra.get("texts")
        if self.port is None:
            return generic.columns_of(steps, self.features, texts)
        return _port_columns(self.port, episode, steps, self.features)

    def image_sources(self, episode: ExportEpisode) -> dict[str, tuple[str, str]]:
        """Each image feature's TED frame file (relative to the TED folder) and row layout."""
        if self.port is None:
            return generic.image_sources(episode.meta, episode.ted, self.features)
        return {
            f.name: (episode.meta.keys[f.take.path]["file"], _layout(episode, f.take))
            for f in self.port.features
            if isinstance(f.take, Camera)
        }

    def images(self, episode: ExportEpisode, steps: TensorDictBase) -> dict[str, np.ndarray]:
        """The image features of ``steps`` (rows of ``episode``) as (N, H, W, 3) uint8."""
        if self.port is None:
            return generic.images_of(steps, self.features, declared_images(episode.meta))
        return {
            f.name: to_hwc(steps.get(_key(f.take.path)).numpy(), _layout(episode, f.take))
            for f in self.port.features
            if isinstance(f.take, Camera)
        }

    def frames(self, episode: ExportEpisode) -> list[dict]:
        """One LeRobot frame dict per step of ``episode``, without ``task``."""
        steps = episode.steps()
        cols = {**self.columns(episode, steps), **self.images(episode, steps)}
        return [{k: v[i] for k, v in cols.items()} for i in range(episode.length)]


def schema_of(first: ExportEpisode, video: bool) -> ExportSchema:
    """The schema of an export whose episodes come from ``first``'s source."""
    port = port_of(first.source, first.partition)
    if port is not None:
        return ExportSchema(_port_features(port, first, video), port.fps, port.robot_type, port)
    features = generic.features_for(
        first.ted,
        video,
        first.meta.extra.get("feature_names"),
        declared_images(first.meta),
        first.meta.extra.get("texts"),
    )
    return ExportSchema(features, _fps(first), first.meta.robot_type or first.source)


def _fps(first: ExportEpisode) -> int:
    from episode_warehouse.sources import registry

    fps = registry.fps(first.source, first.partition, first.meta.fps)
    if fps is None:
        raise ExportError(
            "the data's control rate is unknown (its source records none and the OXE table of "
            "rates has no entry); a LeRobot dataset needs one",
            subject=f"{first.source}/{first.partition}",
            fix="state the dataset's published rate (OPENX_CONTROL_HZ=DATASET=HZ for an OXE "
            "dataset) and materialize it again, or export partitions whose rate is known",
        )
    if fps != int(fps):
        raise ExportError(
            f"the data runs at {fps} steps per second; a LeRobot dataset's fps is a whole number",
            subject=f"{first.source}/{first.partition}",
            fix="export from partitions of a whole-number rate (LeRobot timestamps are "
            "frame_index / fps)",
        )
    return int(fps)


def _key(path: str) -> tuple[str, ...]:
    return tuple(path.split("/"))


def _has(steps: TensorDictBase, path: str) -> bool:
    key = _key(path)
    return (key[0] if len(key) == 1 else key) in steps.keys(True, True)


def _missing(port: Port, episode: ExportEpisode, what: str) -> ExportError:
    return ExportError(
        f"LeRobot's port of {port.dataset} ({port.origin}) reads {what}, which this partition "
        "does not hold",
        subject=f"{episode.source}/{episode.partition}",
        fix="materialize the partition again from the dataset as published (its TED lacks the "
        "field), or export it with another name for its dataset",
    )


def _layout(episode: ExportEpisode, camera: Camera) -> str:
    path = _key(camera.path)
    if camera.path not in episode.meta.keys or not _has(episode.ted, camera.path):
        raise ExportError(
            f"the camera {camera.path} is not in the TED",
            subject=f"{episode.source}/{episode.partition}",
            fix="materialize the partition again from the dataset as published",
        )
    layout = image_layout(path[1:], episode.ted.get(path), declared_images(episode.meta))
    if layout in (None, DEPTH):
        raise ExportError(
            f"{camera.path} is not an 8-bit camera",
            subject=f"{episode.source}/{episode.partition}",
            fix="materialize the partition again from the dataset as published",
        )
    return layout


def _port_features(port: Port, first: ExportEpisode, video: bool) -> dict:
    feats = {}
    for f in port.features:
        shape = f.shape
        dtype = f.dtype
        if isinstance(f.take, Camera):
            _layout(first, f.take)
            h, w = first.ted.get(_key(f.take.path)).shape[-2:]
            shape, dtype = (int(h), int(w), 3), "video" if video else "image"
        feats[f.name] = {"dtype": dtype, "shape": shape, "names": f.names()}
    return feats


def _port_columns(
    port: Port, episode: ExportEpisode, steps: TensorDictBase, features: dict
) -> dict[str, np.ndarray]:
    n = steps.batch_size[0]
    texts = episode.meta.extra.get("texts") or {}
    cols: dict[str, np.ndarray] = {}
    for f in port.features:
        take = f.take
        if isinstance(take, Camera):
            continue
        if isinstance(take, Steps):
            parts = []
            for path in take.paths:
                if not _has(steps, path):
                    raise _missing(port, episode, f"the step leaf {path}")
                parts.append(steps.get(_key(path)).numpy().reshape(n, -1))
            cols[f.name] = np.concatenate(parts, axis=1).astype(f.dtype).reshape(n, *f.shape)
        elif isinstance(take, Text):
            cols[f.name] = _texts(port, episode, steps, take, texts)
        else:
            cols[f.name] = _episode_value(port, episode, take, f.dtype, f.shape, n)
    return {k: v for k, v in cols.items() if k in features}


def _texts(port, episode, steps, take: Text, texts: dict) -> np.ndarray:
    n = steps.batch_size[0]
    if take.path == "task":
        if "task_index" not in steps.keys() or not episode.meta.tasks:  # noqa: SIM118
            return np.asarray([episode.task] * n, dtype=object)
        table = np.asarray(episode.meta.tasks, dtype=object)
        return table[steps["task_index"].numpy().astype(np.int64).reshape(n)]
    if take.path not in texts or not _has(steps, take.path):
        raise _missing(port, episode, f"the text leaf {take.path}")
    table = np.asarray(texts[take.path], dtype=object)
    return table[steps.get(_key(take.path)).numpy().astype(np.int64).reshape(n)]


def _episode_value(port, episode, take: EpisodeValue, dtype: str, shape, n: int) -> np.ndarray:
    if take.key not in episode.metadata:
        raise _missing(port, episode, f"the episode value {take.key}")
    value = episode.metadata[take.key]
    if take.contains is not None:
        return np.full((n, 1), take.contains in str(value), dtype=bool)
    if dtype == "string":
        return np.asarray([str(value)] * n, dtype=object)
    row = np.asarray(value, dtype=np.float64).astype(dtype).reshape(shape)
    return np.broadcast_to(row, (n, *shape)).copy()
