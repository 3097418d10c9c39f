"""One LeRobot v3 dataset from a mixture of standardized partitions (several robots), written
with lerobot's own writer (``LeRobotDataset.create``, ``add_frame``, ``save_episode``,
``finalize``). LeRobot's ``aggregate_datasets`` needs one fps, robot type and feature set; here
the features are made common first:

- ``action`` float32 [A] and ``observation.state`` float32 [S], zero padded to the widest
  dataset (``action_dim_is_pad`` / ``state_dim_is_pad`` flag the padding per frame);
- ``observation.images.<view>`` for each chosen view, resized to ``image_size`` (black where
  a dataset lacks the view, flagged by ``<view>_view_is_pad``; lerobot takes any key holding
  "image" for a camera);
- ``dataset_index`` int64: which dataset of ``meta/warehouse_mixture.json`` (name, robot type,
  own fps, action and proprio encodings, weight, episodes) the frame comes from;
- the task is the episode's instruction (its first step's).

LeRobot has one fps per dataset: the export's is ``fps`` (default: the first dataset's), each
dataset's own rate is kept in ``warehouse_mixture.json``; timestamps are ``frame_index / fps``.
Actions and states are the standardized values (not normalized): LeRobot computes its own
statistics, and each dataset's Octo statistics are in ``warehouse_mixture.json`` too.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from episode_warehouse.errors import ExportError
from episode_warehouse.export.lerobot import check_export_name
from episode_warehouse.export.lerobot_compat import quiet_datasets
from episode_warehouse.export.record import ExportRecord
from episode_warehouse.incremental import Built, build_if_changed
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.progress import progress
from episode_warehouse.sources import registry
from episode_warehouse.standardized.mixtures import Mix, resolve
from episode_warehouse.standardized.reader import Opened, locate

log = logging.getLogger(__name__)
MIXTURE_FILE = "meta/warehouse_mixture.json"


def _features(views, size, action_dim, state_dim) -> dict:
    features: dict[str, dict] = {
        "action": {"dtype": "float32", "shape": (action_dim,), "names": None},
        "action_dim_is_pad": {"dtype": "bool", "shape": (action_dim,), "names": None},
        "dataset_index": {"dtype": "int64", "shape": (1,), "names": None},
    }
    if state_dim:
        features["observation.state"] = {"dtype": "float32", "shape": (state_dim,), "names": None}
        features["state_dim_is_pad"] = {"dtype": "bool", "shape": (state_dim,), "names": None}
    for view in views:
        features[f"observation.images.{view}"] = {
            "dtype": "image",
            "shape": (size[0], size[1], 3),
            "names": ["height", "width", "channels"],
        }
        features[f"{view}_view_is_pad"] = {
            "dtype": "bool", "shape": (1,), "names": None,
        }  # fmt: skip
    return features


def _pad(values: np.ndarray, width: int) -> np.ndarray:
    out = np.zeros((len(values), width), np.float32)
    out[:, : values.shape[1]] = values
    return out


def _episodes(opened: Opened, limit: int | None) -> list[tuple[int, int]]:
    starts = np.flatnonzero(np.asarray(opened.array("is_init")))
    ends = np.flatnonzero(np.asarray(opened.array("done")))
    pairs = list(zip(starts.tolist(), (ends - starts + 1).tolist(), strict=True))
    return pairs[:limit] if limit else pairs


def _write(parts, out: Path, name, views, size, fps) -> tuple[int, int, dict]:
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    action_dim = max(o.meta.action_dim for _, o, _, _ in parts)
    state_dim = max(o.meta.state_dim for _, o, _, _ in parts)
    if out.is_dir() and not any(out.iterdir()):
        out.rmdir()  # lerobot creates the dataset root itself
    dataset = LeRobotDataset.create(
        f"episode-warehouse/{name}",
        fps=fps,
        features=_features(views, size, action_dim, state_dim),
        root=out,
        use_videos=False,
        robot_type="mixed",
    )
    layout = _Layout(views, size, action_dim, state_dim)
    frames = episodes = 0
    table = []
    total = sum(length for *_, chosen in parts for _, length in chosen)
    with quiet_datasets(), progress("exporting the mixture", total, "frames") as bar:
        for index, part in enumerate(parts):
            written, row = _write_part(dataset, index, part, layout, bar)
            frames += written
            episodes += row["episodes"]
            table.append(row)
    dataset.finalize()
    return frames, episodes, {"fps": fps, "datasets": table}


@dataclass(frozen=True)
class _Layout:
    """The export's common features: its views at one size, the widest action and state."""

    views: tuple[str, ...]
    size: tuple[int, int]
    action_dim: int
    state_dim: int


def _write_part(dataset, index: int, part, layout: _Layout, bar) -> tuple[int, dict]:
    """The chosen episodes of one dataset of the mixture into ``dataset``: (frames written,
    the dataset's row of ``meta/warehouse_mixture.json``)."""
    from episode_warehouse.standardized.images import resize  # torch: not at import

    label, opened, weight, chosen = part
    meta = opened.meta
    action = np.asarray(opened.array("action"))
    state = np.asarray(opened.array("state")) if meta.state_dim else None
    rows = np.asarray(opened.array("ted_row"))
    texts = opened.instructions[np.asarray(opened.array("instruction"))]
    size, state_dim = layout.size, layout.state_dim
    frames = 0
    for start, length in chosen:
        steps = slice(start, start + length)
        a = _pad(action[steps], layout.action_dim)
        s = _pad(state[steps], state_dim) if state is not None else None
        pixels = {}
        for view in layout.views:
            source = opened.frames(view)
            if source is not None:
                pixels[view] = resize(np.asarray(source[rows[steps]]), size).numpy()
        for t in range(length):
            frame = {
                "action": a[t],
                "action_dim_is_pad": np.arange(layout.action_dim) >= meta.action_dim,
                "dataset_index": np.array([index], np.int64),
                "task": str(texts[start]) or label,
            }
            if state_dim:
                frame["observation.state"] = (
                    s[t] if s is not None else np.zeros(state_dim, np.float32)
                )
                frame["state_dim_is_pad"] = np.arange(state_dim) >= meta.state_dim
            for view in layout.views:
                here = view in pixels
                frame[f"observation.images.{view}"] = (
                    pixels[view][t].transpose(1, 2, 0) if here else np.zeros((*size, 3), np.uint8)
                )
                frame[f"{view}_view_is_pad"] = np.array([not here])
            dataset.add_frame(frame)
        dataset.save_episode()
        frames += length
        bar.update(length)
    row = {
        "index": index, "dataset": label, "source": meta.source,
        "partition": meta.partition, "robot_type": meta.robot_type, "fps": meta.fps,
        "action_dim": meta.action_dim, "state_dim": meta.state_dim,
        "action_encoding": meta.action_encoding, "proprio_encoding": meta.proprio_encoding,
        "weight": weight, "episodes": len(chosen),
        "statistics": json.loads((opened.folder / "dataset_statistics.json").read_text()),
    }  # fmt: skip
    return frames, row


def export_mixture(
    mix: Mix,
    name: str,
    root=None,
    *,
    views: tuple[str, ...] = ("primary", "wrist"),
    image_size: tuple[int, int] = (128, 128),
    fps: int | None = None,
    max_episodes: int | None = None,
) -> Built[ExportRecord]:
    """Export every standardized partition of ``mix`` (at most ``max_episodes`` episodes
    each) as one LeRobot dataset at ``<root>/lerobot/<name>`` (see the module docstring).

    Raises:
        ExportError: a fractional fps, or nothing to export.
        ConfigError: an empty mixture.
    """
    check_export_name(name)
    layout = WarehouseLayout.from_root(root)
    parts = []
    for source, partition, weight, _ in resolve(mix, layout.root):
        opened = locate(source, partition, layout.root)
        label = registry.dataset_name(source, partition)
        parts.append((label, opened, weight, _episodes(opened, max_episodes)))
    rate = fps if fps is not None else parts[0][1].meta.fps
    if rate is None or rate != int(rate) or rate <= 0:
        raise ExportError(
            f"the export's rate would be {rate}; a LeRobot dataset's fps is a whole number",
            subject=f"mixture export {name}",
            fix="pass fps=<whole number> (each dataset's own rate is recorded beside it)",
        )
    request = {
        "mode": "mixture",
        "mix": [[p[0], p[2]] for p in parts],
        "views": list(views),
        "image_size": list(image_size),
        "fps": int(rate),
        "max_episodes": max_episodes,
    }
    inputs = {
        "request": request,
        "standardized": {f"{p[1].source}:{p[1].partition}": p[1].meta.version for p in parts},
    }

    def build(tmp: Path) -> ExportRecord:
        out = tmp / "dataset"
        frames, episodes, table = _write(parts, out, name, tuple(views), tuple(image_size),
                                         int(rate))  # fmt: skip
        for item in out.iterdir():  # the dataset's files at the artifact's root
            item.rename(tmp / item.name)
        out.rmdir()
        (tmp / MIXTURE_FILE).write_text(json.dumps(table, indent=1, allow_nan=False))
        listed = [[p[0], s, n] for p in parts for s, n in p[3]]
        return ExportRecord(
            name=name, frames=frames, episodes=episodes, request=request, episode_list=listed
        )

    return build_if_changed(layout.root, layout.lerobot_dir(name), inputs, build,
                            record_type=ExportRecord)  # fmt: skip
