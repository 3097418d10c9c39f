"""A LeRobot v3.0 or v2.1 dataset in a folder: its metadata, checked before any frame is read.

``<folder>/meta/info.json`` (features, fps, robot type), ``meta/episodes/*/*.parquet`` (one row
per episode: length, tasks, which data file holds it), ``meta/tasks.parquet`` (task text ->
``task_index``) and ``data/chunk-*/file-*.parquet`` (the frames, many episodes per file, in
dataset order). Format facts: shared/reference/lerobot-v3.md. A v2.1 dataset's JSON-lines
metadata is read into the same tables (``v21.py``); where the frames are is the version's
``layout``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from episode_warehouse.errors import CorruptInputError, LimitExceededError
from episode_warehouse.guards.json_input import read_json_file
from episode_warehouse.guards.names import checked_segment
from episode_warehouse.guards.shapes import checked_shape
from episode_warehouse.guards.text import checked_identifier
from episode_warehouse.limits import LIMITS_FIX, InputLimits, check_text
from episode_warehouse.sources.lerobot import v21
from episode_warehouse.sources.lerobot.layout import (
    LAYOUTS,
    V30,
    Layout,
    check_templates,
    unreadable,
)

CODEBASE_VERSION = "v3.0"
INFO = "meta/info.json"
TASKS = "meta/tasks.parquet"
# columns every LeRobot frame has besides its features (utils/constants.py)
BOOKKEEPING = ("timestamp", "frame_index", "episode_index", "index", "task_index")
VIDEO_COLUMNS = ("chunk_index", "file_index", "from_timestamp")  # per video key, per episode


@dataclass(frozen=True)
class Feature:
    name: str
    dtype: str  # "image", "video", or a numpy dtype name
    shape: tuple[int, ...]
    names: list | dict | None = None  # info.json's names of the dimensions, kept for exports


@dataclass(frozen=True)
class LeRobotFolder:
    """The checked metadata of one dataset (frames are read by ``decode.py``)."""

    folder: Path
    fps: int
    robot_type: str | None
    features: dict[str, Feature]
    tasks: list[str]  # by task_index
    episodes: pa.Table  # episode_index, length, tasks, dataset_from_index/to_index, videos/...
    data_files: list[Path]  # in dataset order
    layout: Layout = V30  # where the version keeps data and video files

    @property
    def frames(self) -> int:
        return int(np.sum(self.episodes.column("length").to_numpy()))


def _read_json(path: Path) -> dict:
    try:
        info = read_json_file(path, fix=_INFO_FIX)
    except FileNotFoundError:
        raise CorruptInputError(
            "not a LeRobot dataset: meta/info.json is missing",
            subject=str(path),
            fix="point LEROBOT_URL at the folder holding <owner>/<name>/meta/info.json",
        ) from None
    except OSError as exc:
        raise CorruptInputError(
            f"cannot read it ({exc})", subject=str(path), fix="download the dataset again"
        ) from None
    if not isinstance(info, dict):
        raise CorruptInputError(
            "meta/info.json is not a JSON object", subject=str(path), fix=_INFO_FIX
        )
    return info


_INFO_FIX = (
    "download the dataset again; if it is yours, write meta/info.json as lerobot does "
    "(LeRobotDataset.create) or check it with LeRobotDatasetMetadata"
)
_COUNTS_FIX = (
    "the dataset's metadata and data disagree: download it again, or if it is yours, "
    "recompute meta/ with lerobot (its dataset tools) before reading it"
)


def _check_totals(folder: Path, info: dict, tasks: list, episodes: pa.Table, files: list[Path]):
    """info.json's declared totals and meta/episodes' lengths equal the data files' frames."""
    frames_per_file = [_rows(f) for f in files]
    lengths = episodes.column("length").to_numpy()
    declared = {
        "total_episodes": (info.get("total_episodes"), len(episodes), "episodes in meta/episodes"),
        "total_frames": (info.get("total_frames"), int(sum(frames_per_file)), "frames in data/"),
        "total_tasks": (info.get("total_tasks"), len(tasks), "tasks in meta/tasks.parquet"),
    }
    for name, (said, found, what) in declared.items():
        if said is not None and (isinstance(said, bool) or said != found):
            raise CorruptInputError(
                f"info.json declares {name} {said!r}, but there are {found} {what}",
                subject=str(folder / INFO),
                fix=_COUNTS_FIX,
            )
    counts = np.zeros(len(lengths), np.int64)
    for f in files:
        index = _table(f, ["episode_index"]).column("episode_index").to_numpy()
        if len(index) and (index.min() < 0 or index.max() >= len(lengths)):
            raise CorruptInputError(
                f"frames name episode {int(index.max() if index.max() >= 0 else index.min())}, "
                f"but meta/episodes has {len(lengths)} episodes",
                subject=str(f),
                fix=_COUNTS_FIX,
            )
        counts += np.bincount(index, minlength=len(lengths))
    off = np.flatnonzero(counts != lengths)
    if len(off):
        e = int(off[0])
        raise CorruptInputError(
            f"meta/episodes says episode {e} has {int(lengths[e])} frames, the data files hold "
            f"{int(counts[e])} ({len(off)} episodes disagree)",
            subject=str(folder / "meta" / "episodes"),
            fix=_COUNTS_FIX,
        )


def _unreadable(path: Path, exc: Exception) -> CorruptInputError:
    return CorruptInputError(
        f"not a readable Parquet file ({str(exc).splitlines()[0]})",
        subject=str(path),
        fix="download the dataset again (the file is truncated or corrupt)",
    )


def _table(path: Path, columns: list[str] | None = None) -> pa.Table:
    try:
        return pq.read_table(path, columns=columns)
    except (OSError, pa.ArrowException) as exc:
        raise _unreadable(path, exc) from None


_FEATURE_DTYPES = ("image", "video", "string")
MAX_FEATURE_BYTES = 1 << 30  # one frame of one feature, as declared


def _feature(name: str, spec: object, info: Path) -> Feature:
    """One declared feature, its dtype a kind lerobot writes and its shape bounded."""
    spec = spec if isinstance(spec, dict) else {}
    dtype = spec.get("dtype")
    known = isinstance(dtype, str) and (dtype in _FEATURE_DTYPES or _numeric(dtype))
    if not known:
        raise CorruptInputError(
            f"feature {name!r} declares dtype {dtype!r}: not image, video, string or a number type",
            subject=str(info),
            fix=_INFO_FIX,
        )
    shape = checked_shape(
        spec.get("shape"),
        dtype="uint8" if dtype in _FEATURE_DTYPES else str(dtype),
        subject=str(info),
        what=f"feature {name!r}",
        max_bytes=MAX_FEATURE_BYTES,
        fix=_INFO_FIX,
    )
    if dtype in ("image", "video") and (len(shape) != 3 or shape[2] not in (1, 3, 4)):
        raise CorruptInputError(
            f"{dtype} feature {name!r} declares shape {shape}: a camera is (height, width, "
            "channels) with 1, 3 or 4 channels",
            subject=str(info),
            fix=_INFO_FIX,
        )
    return Feature(name, str(dtype), shape, _names(spec.get("names"), name, info))


def _names(value: object, feature: str, info: Path) -> list | dict | None:
    """A feature's ``names`` as lerobot writes them (a list of strings, or a dict of such lists,
    e.g. ``{"motors": [...]}``), bounded; anything else is refused by name."""
    if value is None:
        return None
    lists = value.values() if isinstance(value, dict) else [value]
    ok = len(json.dumps(value, allow_nan=False)) <= 64 << 10 and all(
        isinstance(v, list) and all(isinstance(n, str) for n in v) for v in lists
    )
    if not ok or not isinstance(value, list | dict):
        raise CorruptInputError(
            f"feature {feature!r} declares names that are not a list of strings (or a dict of "
            "such lists)",
            subject=str(info),
            fix=_INFO_FIX,
        )
    return value


def _numeric(dtype: str) -> bool:
    try:
        return np.dtype(dtype).kind in "biuf"
    except TypeError:
        return False


def _rows(path: Path) -> int:
    """The rows of a Parquet file, from its footer."""
    try:
        return pq.ParquetFile(path).metadata.num_rows
    except (OSError, pa.ArrowException) as exc:
        raise _unreadable(path, exc) from None


def _stats_columns(path: Path) -> list[str]:
    """The ``stats/<feature>/<stat>`` columns of an episodes file (kept for the catalog)."""
    try:
        names = pq.read_schema(path).names
    except (OSError, pa.ArrowException):
        return []  # _table names the unreadable file
    return [n for n in names if n.startswith("stats/")]


def open_lerobot_folder(folder: Path) -> LeRobotFolder:
    """Read and check a dataset's metadata.

    Raises:
        CorruptInputError: missing or unreadable metadata, an episode index gap, episodes that
            do not tile the frames, a data file that is missing.
        FormatVersionError: a version no layout reads (v2.0 and older: names lerobot's
            converter).
    """
    folder = Path(folder)
    info = _read_json(folder / INFO)
    layout = LAYOUTS.get(info.get("codebase_version"))  # type: ignore[arg-type]
    if layout is None:
        raise unreadable(info.get("codebase_version"), str(folder / INFO))
    check_templates(info, layout, str(folder / INFO))
    fps = info.get("fps")
    if isinstance(fps, bool) or not isinstance(fps, int | float) or fps <= 0 or fps != int(fps):
        raise CorruptInputError(
            f"fps is {fps!r}, not a positive whole number of frames per second",
            subject=str(folder / INFO),
            fix="set fps in meta/info.json to the recording's frame rate (e.g. 30)",
        )
    fps = int(fps)
    features_doc = info.get("features")
    if not isinstance(features_doc, dict) or not features_doc:
        raise CorruptInputError(
            "info.json declares no features", subject=str(folder / INFO), fix=_INFO_FIX
        )
    features = {name: _feature(name, spec, folder / INFO) for name, spec in features_doc.items()}
    tasks_file = folder / (TASKS if layout is V30 else v21.TASKS)
    tasks = _tasks(folder) if layout is V30 else v21.read_tasks(folder)
    limits = InputLimits()  # the defaults: a task is a sentence, a table of them small
    for i, task in enumerate(tasks):  # each is kept in the decoded and TED records
        check_text(str(task), limits, what=f"task {i}", subject=str(tasks_file))
    if len(tasks) > limits.max_texts:
        raise LimitExceededError(
            f"{tasks_file.name} holds {len(tasks):,} tasks, over the limit of {limits.max_texts:,}",
            subject=str(tasks_file),
            fix=LIMITS_FIX,
        )
    # a video feature's name is a folder of its files: one safe path segment (the names guard)
    videos = [
        checked_segment(n, subject=str(folder / INFO), what="video feature name")
        for n, f in features.items()
        if f.dtype == "video"
    ]
    if layout is V30:
        episodes = _check_episodes(_episodes(folder, videos), folder / "meta" / "episodes")
    else:
        episodes = _check_episodes(v21.read_episodes(folder, info, videos), folder / v21.EPISODES)
        episodes = v21.with_stats(folder, episodes)
    wanted = {
        layout.data_path(folder, c, f)
        for c, f in zip(
            episodes.column("data/chunk_index").to_pylist(),
            episodes.column("data/file_index").to_pylist(),
            strict=True,
        )
    }
    missing = sorted(str(p) for p in wanted if not p.is_file())
    if missing:
        raise CorruptInputError(
            f"the episodes' data file is missing ({len(missing)} missing)",
            subject=missing[0],
            fix="download the dataset again",
        )
    _check_totals(folder, info, tasks, episodes, sorted(wanted))
    robot_type = info.get("robot_type")
    if robot_type is not None:
        checked_identifier(
            robot_type,
            what="robot_type",
            subject=str(folder / INFO),
            fix="set robot_type in meta/info.json to a plain name such as so100_follower",
        )
    return LeRobotFolder(folder, fps, robot_type, features, tasks, episodes, sorted(wanted), layout)


def _episodes(folder: Path, videos: list[str]) -> pa.Table:
    files = sorted((folder / "meta" / "episodes").glob("chunk-*/file-*.parquet"))
    if not files:
        raise CorruptInputError(
            "the dataset has no episode metadata",
            subject=str(folder / "meta" / "episodes"),
            fix="download the dataset again (meta/episodes/chunk-*/file-*.parquet)",
        )
    columns = [
        "episode_index",
        "length",
        "tasks",
        "data/chunk_index",
        "data/file_index",
        "dataset_from_index",
        "dataset_to_index",
    ]
    columns += [f"videos/{key}/{c}" for key in videos for c in VIDEO_COLUMNS]
    return pa.concat_tables(
        [_table(f, columns + _stats_columns(f)) for f in files], promote_options="default"
    ).sort_by("episode_index")


def _tasks(folder: Path) -> list[str]:
    """v3.0's task texts by ``task_index``."""
    table = _table(folder / TASKS, ["task_index", "task"])
    order = np.argsort(table.column("task_index").to_numpy())
    names = table.column("task").to_pylist()
    return [names[i] for i in order]


def _check_episodes(table: pa.Table, subject: Path) -> pa.Table:
    """Episode indices 0..n-1, each once, whose frames tile the dataset (either version)."""
    index = table.column("episode_index").to_numpy()
    if len(index) and not np.array_equal(index, np.arange(len(index))):
        gap = int(np.flatnonzero(index != np.arange(len(index)))[0])
        raise CorruptInputError(
            f"episode indices are not 0..{len(index) - 1}: episode {gap} is missing or "
            f"duplicated (found {int(index[gap])})",
            subject=str(subject),
            fix="download the dataset again, or re-index it with lerobot",
        )
    start = table.column("dataset_from_index").to_numpy()
    end = table.column("dataset_to_index").to_numpy()
    length = table.column("length").to_numpy()
    if len(start) and (
        start[0] != 0 or (start[1:] != end[:-1]).any() or (end - start != length).any()
    ):
        raise CorruptInputError(
            "episodes do not tile the frames (dataset_from_index/to_index/length disagree)",
            subject=str(subject),
            fix="download the dataset again",
        )
    return table
