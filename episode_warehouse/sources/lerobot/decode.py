"""Decode a LeRobot v3.0 dataset folder into a decoded-episodes folder, one data file at a time.

Keys follow TorchRL's layout for LeRobot data (``torchrl.data.datasets.lerobot``):
``observation.images.<cam>`` -> ``observation/image/<cam>`` (uint8 CHW, LeRobot's pixels exactly:
PNG images decoded here, video frames by ``video.py`` as lerobot resolves them),
``observation.state`` -> ``observation/state``, other dotted names -> nested keys, ``frame_index``
-> ``frame``, ``next.reward`` -> the reward, ``next.<x>`` -> ``("next", x)``, ``task_index`` kept
with the tasks' text in ``meta.json["tasks"]``. ``episode_index`` and ``index`` become the TED's
own episode ids and rows. ``terminated`` comes from ``next.terminated`` (else ``next.done``, less
``next.truncated``) on each episode's last frame; without either, every episode ends truncated
(a recording that stops is not a terminal state). Memory: one data file's columns at a time.

Most real datasets (``lerobot-record`` teleoperation: SO-100/101, Koch, ALOHA) have no
``next.reward`` and no ``next.done``: their TED has no ``("next", "reward")`` (no reward is
invented) and their catalog ``return`` is NULL. Extra keys (``next.success``,
``complementary_info.*``) are carried like any other feature.

Refused, naming the feature, the file and the fix: a declared dtype that would change the stored
values, NaN or infinite actions or states, a ``task_index`` outside the tasks table.
"""

from __future__ import annotations

import json
import logging
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from episode_warehouse.decoded import ArraySpec, DecodedWriter
from episode_warehouse.decoded.format import CHW, episode_table
from episode_warehouse.decoded.record import DecodedRecord
from episode_warehouse.errors import CorruptInputError
from episode_warehouse.frames.camera_rows import CameraRows
from episode_warehouse.frames.codec import declared, decode_frame, plain_png
from episode_warehouse.guards.numbers import check_finite
from episode_warehouse.progress import progress
from episode_warehouse.sources.lerobot.dataset import Feature, LeRobotFolder, _table
from episode_warehouse.sources.lerobot.video import VideoFrames
from episode_warehouse.threads import compute_threads

log = logging.getLogger(__name__)
TERMINAL = ("next.terminated", "next.done")  # read into the terminal flag, not kept as keys


def decoded_key(name: str) -> tuple[str, str]:
    """(decoded key, role) of a LeRobot feature."""
    if name.startswith("observation.images."):
        return "observation/image/" + name.removeprefix("observation.images."), "observation"
    if name.startswith("observation."):
        return name.replace(".", "/"), "observation"
    if name == "next.reward":
        return "reward", "reward"
    if name.startswith("next."):
        return name.removeprefix("next.").replace(".", "/"), "next"
    if name == "frame_index":
        return "frame", "step"
    return name.replace(".", "/"), "step"


def _spec(feature: Feature) -> ArraySpec:
    key, role = decoded_key(feature.name)
    if feature.dtype in ("image", "video"):
        h, w, c = feature.shape
        return ArraySpec(key, (c, h, w), "|u1", role)
    shape = feature.shape if feature.shape != (1,) else ()  # scalars: one value per frame
    if role in ("reward", "next") and shape:
        role = "step"  # the TED adds the trailing dim to these; a vector stays as it is
        key = "next_" + key.replace("/", "_")
    return ArraySpec(key, shape, np.dtype(feature.dtype).str, role)


def _decode_images(table: pa.Table, feature: Feature, file: Path) -> CameraRows:
    """Every image of ``column`` (LeRobot's writer stores PNG) as uint8 CHW, accepted and decoded
    by the codec table's rule, as every reader of the frame will (its header checked against
    info.json's shape before it is decoded); rows are decoded on one thread per core (the
    decoder releases the GIL). The PNG bytes come along where they stand for the pixels as they
    are (8-bit grey or RGB)."""
    h, w, c = feature.shape
    column = table.column(feature.name)
    out = np.empty((len(column), c, h, w), dtype=np.uint8)
    data = column.combine_chunks().field("bytes").to_pylist()
    episode, frame = (table.column(k).to_numpy() for k in ("episode_index", "frame_index"))

    def decode(rows: range) -> None:
        for i in rows:
            blob, where = data[i] or b"", f"{file} row {i} of {feature.name}"
            info = declared(blob, where)
            if info.row() != (c, h, w) or info.dtype != np.uint8:
                raise CorruptInputError(
                    f"row {i} of {feature.name} declares {info.row()} {info.dtype} (channels, "
                    f"height, width), info.json says {(c, h, w)} uint8",
                    subject=str(file),
                    fix="download the dataset again",
                )
            try:
                out[i] = decode_frame(blob, (c, h, w), np.dtype(np.uint8), where)
            except CorruptInputError as exc:  # a source's frame: the fix is not ours to redo
                raise CorruptInputError(
                    f"episode {int(episode[i])} step {int(frame[i])}: {exc.what}",
                    subject=str(file),
                    fix="the dataset's frame is damaged: download the dataset again, or remove "
                    "the episode (lerobot's dataset tools)",
                ) from None

    step = 64
    with ThreadPoolExecutor(max_workers=compute_threads()) as pool:
        list(
            pool.map(
                decode, [range(a, min(a + step, len(data))) for a in range(0, len(data), step)]
            )
        )
    return CameraRows(out, [png if plain_png(png) else None for png in data])


def _frame(table: pa.Table, flat_index: int, per_row: int) -> int:
    """The dataset's frame index (``index`` column) of element ``flat_index`` of a column."""
    return int(table.column("index")[flat_index // max(per_row, 1)].as_py())


def _check_cast(raw: np.ndarray, values: np.ndarray, feature: Feature, table, file) -> None:
    """Refuse a declared dtype that would change the stored values (float data declared int8
    or uint8: 0.943 would become 0 and -1.088 would become 255); float to float only rounds."""
    if raw.dtype == values.dtype or (raw.dtype.kind == "f" and values.dtype.kind == "f"):
        return
    with np.errstate(invalid="ignore", over="ignore"):
        back = values.astype(raw.dtype)
    same = back == raw
    if same.all():
        return
    i = int(np.flatnonzero(~same)[0])
    per_row = raw.size // max(len(table), 1)
    raise CorruptInputError(
        f"{feature.name} holds {raw.dtype} values that info.json's dtype {feature.dtype!r} "
        f"would change (frame {_frame(table, i, per_row)}: {raw[i]!r} would become "
        f"{values[i]!r})",
        subject=str(file),
        fix=f"declare {feature.name} with the dtype of its data ({raw.dtype}) in meta/info.json, "
        "or re-record the dataset",
    )


def _measured(feature: Feature) -> bool:
    """Actions and (non-image) states: a NaN or infinity there is a broken recording."""
    return feature.name == "action" or feature.name.startswith(("action.", "observation."))


def _check_finite(values: np.ndarray, feature: Feature, table, file) -> None:
    if values.dtype.kind != "f" or not _measured(feature):
        return
    check_finite(
        values.reshape(len(table), -1) if len(table) else values,
        key=feature.name,
        subject=str(file),
        locate=lambda row: f"frame {int(table.column('index')[row].as_py())}",
        name_rows=lambda rows: (
            "in episodes "
            + ", ".join(
                str(e) for e in np.unique(table.column("episode_index").to_numpy()[rows]).tolist()
            )
        ),
        fix="the recording holds invalid values: remove the episode (lerobot's dataset tools) "
        "or record it again",
    )


def _check_lengths(flat: pa.Array, feature: Feature, spec: ArraySpec, table, file) -> None:
    """Refuse frames whose list holds another number of values than info.json's shape (the
    episodes of a merge of recordings made with another schema), naming their episodes."""
    if not pa.types.is_list(flat.type) or not spec.row_shape:
        return
    lengths = pc.fill_null(pc.list_value_length(flat), -1).to_numpy(zero_copy_only=False)
    bad = lengths != spec.row_shape[0]
    if bad.any():
        episodes = np.unique(table.column("episode_index").to_numpy()[bad]).tolist()
        raise CorruptInputError(
            f"{feature.name} holds {int(lengths[bad][0])} values a frame in episodes "
            f"{', '.join(map(str, episodes[:20]))} where info.json's shape is "
            f"{list(feature.shape)} (the schema changes between episodes)",
            subject=str(file),
            fix="remove those episodes (lerobot's dataset tools) or split the dataset by schema",
        )


def _values(
    table: pa.Table, feature: Feature, spec: ArraySpec, file: Path
) -> np.ndarray | CameraRows:
    column = table.column(feature.name)
    if feature.dtype == "image":
        return _decode_images(table, feature, file)
    flat = column.combine_chunks()
    _check_lengths(flat, feature, spec, table, file)
    while pa.types.is_fixed_size_list(flat.type) or pa.types.is_list(flat.type):
        flat = flat.flatten()
    raw = flat.to_numpy(zero_copy_only=False)
    with np.errstate(invalid="ignore", over="ignore"):
        values = raw.astype(np.dtype(spec.dtype), copy=False)
    _check_cast(raw, values, feature, table, file)
    _check_finite(values, feature, table, file)
    try:
        return values.reshape(len(table), *spec.row_shape)
    except ValueError:
        raise CorruptInputError(
            f"column {feature.name} holds {values.size} values for {len(table)} frames, "
            f"info.json says shape {list(feature.shape)}",
            subject=str(file),
            fix="the dataset's info.json disagrees with its data: download it again",
        ) from None


def _video_values(table: pa.Table, dataset: LeRobotFolder, frames: VideoFrames) -> CameraRows:
    """The frames of a video feature for the rows of one data file, episode by episode, with
    each row's video file and frame index there (stored as a reference when frames are kept
    encoded: the MP4s are kept as they are)."""
    episode = table.column("episode_index").to_numpy()
    timestamp = table.column("timestamp").to_numpy()
    meta = dataset.episodes
    prefix = f"videos/{frames.key}/"
    chunk, file, start = (
        meta.column(prefix + c).to_numpy() for c in ("chunk_index", "file_index", "from_timestamp")
    )
    parts, refs, videos = [], [], {}
    bounds = np.flatnonzero(np.diff(episode)) + 1
    for rows in np.split(np.arange(len(episode)), bounds):
        e = int(episode[rows[0]])
        where = (int(chunk[e]), int(file[e]))
        pixels, index = frames.episode(*where, float(start[e]), timestamp[rows], e)
        path = frames.path(*where)
        name = path.relative_to(dataset.folder / "videos").as_posix()
        videos[name] = path
        parts.append(pixels)
        refs += [(name, int(i)) for i in index]
    pixels = np.concatenate(parts) if parts else np.zeros((0,), np.uint8)
    return CameraRows(pixels, refs=refs, videos=videos)


def _check_schema(table: pa.Table, dataset: LeRobotFolder, file: Path) -> None:
    stored = [n for n, f in dataset.features.items() if f.dtype != "video"]  # in videos/
    missing = [n for n in stored if n not in table.schema.names]
    if missing:
        raise CorruptInputError(
            f"info.json lists feature {missing[0]!r}, which the data file has no column for",
            subject=str(file),
            fix="the dataset's info.json disagrees with its data: download it again",
        )
    undeclared = [n for n in table.schema.names if n not in dataset.features]
    if undeclared:  # its values would be dropped without a word
        raise CorruptInputError(
            f"the data file has a column {undeclared[0]!r} that info.json does not list",
            subject=str(file),
            fix="the dataset's info.json disagrees with its data: download it again",
        )


def decode_lerobot(
    dataset: LeRobotFolder, staging: Path, *, lineage: dict | None = None
) -> DecodedRecord:
    """Every frame of ``dataset`` into the decoded folder ``staging``; returns its meta.json.

    Raises:
        CorruptInputError: a data file that is truncated, disagrees with info.json or the
            episode metadata, a video file that is missing, does not decode or disagrees with
            the data in time (each named).
    """
    videos = {
        f.name: VideoFrames(dataset.folder, f.name, dataset.layout)
        for f in dataset.features.values()
        if f.dtype == "video"
    }
    features = [
        f
        for f in dataset.features.values()
        if f.name not in ("episode_index", "index", "timestamp")
    ]
    features += [dataset.features[n] for n in ("timestamp",) if n in dataset.features]
    specs = {f.name: _spec(f) for f in features if f.name not in (*TERMINAL, "next.truncated")}
    writer = DecodedWriter(staging)
    rows = 0
    episode_of, rewards, terminals = [], [], []
    with progress("decoding frames", dataset.frames, "frames") as bar:
        for file in dataset.data_files:
            table = _table(file)
            _check_schema(table, dataset, file)
            index = table.column("index").to_numpy()
            _check_tasks(table, dataset, file)
            if len(index) and not np.array_equal(index, np.arange(rows, rows + len(index))):
                raise CorruptInputError(
                    f"frames {int(index[0])}..{int(index[-1])} follow frame {rows - 1}",
                    subject=str(file),
                    fix="download the dataset again (a data file is missing or out of order)",
                )
            for name, spec in specs.items():
                values: np.ndarray | CameraRows
                if name in videos:  # references into the MP4s, kept as they are
                    values = _video_values(table, dataset, videos[name])
                else:
                    values = _values(table, dataset.features[name], spec, file)
                writer.append(spec, values)
                if spec.role == "reward" and isinstance(values, np.ndarray):
                    rewards.append(values.astype(np.float64))
            episode_of.append(table.column("episode_index").to_numpy())
            terminal = _terminal(table)
            if terminal is not None:
                writer.append(ArraySpec("terminated", (), "|b1", "terminal"), terminal)
                terminals.append(terminal)
            rows += len(index)
            bar.update(len(index))
    if rows != dataset.frames:
        raise CorruptInputError(
            f"the data files hold {rows} frames, the episode metadata {dataset.frames}",
            subject=str(dataset.folder / "data"),
            fix="download the dataset again",
        )

    def joined(parts: list) -> np.ndarray | None:
        return np.concatenate(parts) if parts else None

    episodes = _episode_rows(dataset, joined(episode_of), joined(rewards), joined(terminals))
    return writer.finish(
        episodes,
        {
            "tasks": dataset.tasks,
            "fps": dataset.fps,
            "robot_type": dataset.robot_type,
            # every feature the dataset declares, with its names: an export writes them again
            # (and no feature the source did not have, such as next.done)
            "feature_names": {f.name: f.names for f in dataset.features.values()},
            # its image and video features: the cameras (stored channels first)
            "images": {
                _spec(f).key: CHW
                for f in dataset.features.values()
                if f.dtype in ("image", "video")
            },
            **(lineage or {}),
        },
    )


def _check_tasks(table: pa.Table, dataset: LeRobotFolder, file: Path) -> None:
    """Every frame's ``task_index`` names a row of ``meta/tasks.parquet``."""
    if "task_index" not in table.schema.names:
        return
    tasks = table.column("task_index").to_numpy()
    bad = np.flatnonzero((tasks < 0) | (tasks >= len(dataset.tasks)))
    if len(bad):
        raise CorruptInputError(
            f"frame {_frame(table, int(bad[0]), 1)} has task_index {int(tasks[bad[0]])}, but "
            f"meta/tasks.parquet has {len(dataset.tasks)} tasks (0..{len(dataset.tasks) - 1})",
            subject=str(file),
            fix="download the dataset again (its tasks table and data disagree)",
        )


def _terminal(table: pa.Table) -> np.ndarray | None:
    """Per frame, whether it ends in a terminal state: ``next.terminated``, else ``next.done``
    less ``next.truncated`` where the dataset has it; None without either."""

    def flag(name: str) -> np.ndarray | None:
        if name not in table.schema.names:
            return None
        return table.column(name).to_numpy(zero_copy_only=False).astype(bool).reshape(-1)

    terminated, done, truncated = (flag(n) for n in (*TERMINAL, "next.truncated"))
    if terminated is not None:
        return terminated
    if done is not None and truncated is not None:
        return done & ~truncated
    return done


def _stats_json(meta: pa.Table) -> list[str | None]:
    """Each episode's ``stats/<feature>/<stat>`` columns of ``meta/episodes`` as one JSON
    object, ``{feature: {stat: value}}`` (values as LeRobot stores them)."""
    columns = [n for n in meta.schema.names if n.startswith("stats/")]
    if not columns:
        return [None] * len(meta)
    per_episode: list[dict] = [{} for _ in range(len(meta))]
    for name in columns:
        feature, stat = name.removeprefix("stats/").rsplit("/", 1)
        for stats, value in zip(per_episode, meta.column(name).to_pylist(), strict=True):
            stats.setdefault(feature, {})[stat] = value
    return [json.dumps(s, separators=(",", ":"), allow_nan=False) for s in per_episode]


def _episode_rows(
    dataset: LeRobotFolder,
    episode_of: np.ndarray | None,
    reward: np.ndarray | None,
    terminal: np.ndarray | None,
) -> pa.Table:
    meta = dataset.episodes
    start = meta.column("dataset_from_index").to_numpy()
    length = meta.column("length").to_numpy()
    expected = np.repeat(np.arange(len(start)), length)
    episode_of = episode_of if episode_of is not None else np.zeros(0, dtype=np.int64)
    if not np.array_equal(episode_of, expected):
        row = int(np.flatnonzero(episode_of != expected)[0])
        raise CorruptInputError(
            f"frame {row} has episode_index {int(episode_of[row])}, the episode metadata says "
            f"{int(expected[row])}",
            subject=str(dataset.folder / "data"),
            fix="download the dataset again",
        )
    tasks = meta.column("tasks").to_pylist()
    n = len(start)
    last = start + length - 1
    terminated = terminal[last] if terminal is not None else np.zeros(n, dtype=bool)
    # no next.reward (teleoperation): the return is unknown (NULL), never an invented 0
    returns = (
        np.add.reduceat(reward, start) if reward is not None and n else pa.nulls(n, pa.float64())
    )
    return episode_table(
        {
            "episode": np.arange(n, dtype=np.int64),
            "start": start.astype(np.int64),
            "length": length.astype(np.int64),
            "return": returns,
            "terminated": terminated,
            "truncated": ~terminated,
            "true_start": np.ones(n, dtype=bool),
            "complete": terminated,
            "language_instruction": [t[0] if t else None for t in tasks],
            "tasks": tasks,
            "lerobot_stats": _stats_json(meta),
            "source_files": [
                [dataset.layout.data.format(chunk=c, file=f)]
                for c, f in zip(
                    meta.column("data/chunk_index").to_pylist(),
                    meta.column("data/file_index").to_pylist(),
                    strict=True,
                )
            ],
        }
    )
