"""The metadata of a LeRobot v2.1 dataset, read as the v3.0 reader's tables (``dataset.py``).

v2.1 (lerobot <= 0.3.3, ``meta/info.json`` ``codebase_version`` "v2.1") keeps its metadata as
JSON lines: ``meta/tasks.jsonl`` (``{"task_index", "task"}``), ``meta/episodes.jsonl``
(``{"episode_index", "tasks", "length"}``) and ``meta/episodes_stats.jsonl``
(``{"episode_index", "stats": {feature: {stat: value}}}``), and one data file and one video file
per episode (``layout.V21``). Here they become the columns v3.0 stores in
``meta/episodes/*.parquet``: ``data/chunk_index`` = ``episode // chunks_size``,
``data/file_index`` = the episode, ``dataset_from_index``/``to_index`` the running sum of the
lengths, ``videos/<camera>/from_timestamp`` 0 (each episode's video starts at 0 s), and
``stats/<feature>/<stat>``. Nothing is converted on disk.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa

from episode_warehouse.errors import CorruptInputError
from episode_warehouse.guards.json_input import load_json

TASKS = "meta/tasks.jsonl"
EPISODES = "meta/episodes.jsonl"
STATS = "meta/episodes_stats.jsonl"
MAX_LINE_BYTES = 4 << 20  # one episode's stats: a few KB; cameras' per-channel lists
_FIX = "download the dataset again; if it is yours, rewrite meta/ with lerobot 0.3.3"


def _lines(path: Path) -> Iterator[tuple[int, dict]]:
    """Each line of a JSON-lines file as an object, with its line number; read as a stream
    (a dataset of 100,000 episodes has a stats file of hundreds of MB), each line bounded."""
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        raise CorruptInputError(
            f"a LeRobot v2.1 dataset needs {path.parent.name}/{path.name}; it is missing",
            subject=str(path),
            fix=_FIX,
        ) from None
    with handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            value = load_json(line, subject=where, fix=_FIX, max_bytes=MAX_LINE_BYTES)
            if not isinstance(value, dict):
                raise CorruptInputError("the line is not a JSON object", subject=where, fix=_FIX)
            yield number, value


def _index(value: object, key: str, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise CorruptInputError(f"{key} is {value!r}, not a count", subject=where, fix=_FIX)
    return value


def read_tasks(folder: Path) -> list[str]:
    """Task texts by ``task_index`` (0..n-1, each once)."""
    path = folder / TASKS
    found: dict[int, str] = {}
    for number, line in _lines(path):
        where = f"{path}:{number}"
        index = _index(line.get("task_index"), "task_index", where)
        task = line.get("task")
        if not isinstance(task, str) or index in found:
            raise CorruptInputError(
                f"task {index} is {'listed twice' if index in found else 'not a text'}",
                subject=where,
                fix=_FIX,
            )
        found[index] = task
    if sorted(found) != list(range(len(found))):
        gap = next(i for i in range(len(found) + 1) if i not in found)
        raise CorruptInputError(
            f"task indices are not 0..{len(found) - 1}: task {gap} is missing",
            subject=str(path),
            fix=_FIX,
        )
    return [found[i] for i in range(len(found))]


def read_episodes(folder: Path, info: dict, videos: list[str]) -> pa.Table:
    """``meta/episodes.jsonl`` as v3.0's episode table, in episode order (the checks of indices
    and tiling are the v3.0 reader's, on this table; then :func:`with_stats`)."""
    chunks_size = info.get("chunks_size")
    if isinstance(chunks_size, bool) or not isinstance(chunks_size, int) or chunks_size < 1:
        raise CorruptInputError(
            f"chunks_size is {chunks_size!r}, not a positive number of episodes",
            subject=str(folder / "meta" / "info.json"),
            fix=_FIX,
        )
    path = folder / EPISODES
    rows: list[tuple[int, int, list[str]]] = []
    for number, line in _lines(path):
        where = f"{path}:{number}"
        tasks = line.get("tasks")
        if not isinstance(tasks, list) or not all(isinstance(t, str) for t in tasks):
            raise CorruptInputError("tasks is not a list of texts", subject=where, fix=_FIX)
        rows.append(
            (
                _index(line.get("episode_index"), "episode_index", where),
                _index(line.get("length"), "length", where),
                tasks,
            )
        )
    rows.sort(key=lambda r: r[0])
    episode = np.array([r[0] for r in rows], np.int64)
    length = np.array([r[1] for r in rows], np.int64)
    end = np.cumsum(length)
    columns: dict[str, object] = {
        "episode_index": episode,
        "length": length,
        "tasks": pa.array([r[2] for r in rows], pa.list_(pa.string())),
        "data/chunk_index": episode // chunks_size,
        "data/file_index": episode,
        "dataset_from_index": end - length,
        "dataset_to_index": end,
    }
    for key in videos:
        columns[f"videos/{key}/chunk_index"] = episode // chunks_size
        columns[f"videos/{key}/file_index"] = episode
        columns[f"videos/{key}/from_timestamp"] = np.zeros(len(rows))
    return pa.table(columns)


def with_stats(folder: Path, table: pa.Table) -> pa.Table:
    """``table`` (checked: episodes 0..n-1) with ``stats/<feature>/<stat>`` columns from
    ``meta/episodes_stats.jsonl``, one value per episode (null where an episode has none); a
    dataset without the file has none (it is optional for reading)."""
    for name, column in _stats(folder, table.column("episode_index").to_numpy()).items():
        table = table.append_column(name, column)
    return table


def _stats(folder: Path, episodes: np.ndarray) -> dict[str, pa.Array]:
    path = folder / STATS
    if not path.is_file():
        return {}
    row_of = {int(e): i for i, e in enumerate(episodes)}
    values: dict[str, list] = {}
    for number, line in _lines(path):
        where = f"{path}:{number}"
        episode = _index(line.get("episode_index"), "episode_index", where)
        stats = line.get("stats")
        if episode not in row_of or not isinstance(stats, dict):
            raise CorruptInputError(
                f"stats for episode {episode}, which meta/episodes.jsonl does not list"
                if episode not in row_of
                else "stats is not a JSON object",
                subject=where,
                fix=_FIX,
            )
        for feature, per in stats.items():
            if not isinstance(per, dict):
                raise CorruptInputError(
                    f"stats of {str(feature)[:100]!r} is not a JSON object",
                    subject=where,
                    fix=_FIX,
                )
            for stat, value in per.items():
                column = values.setdefault(f"stats/{feature}/{stat}", [None] * len(episodes))
                column[row_of[episode]] = value
    out = {}
    for name, column in values.items():
        try:
            out[name] = pa.array(column)
        except (pa.ArrowException, OverflowError) as exc:
            raise CorruptInputError(
                f"{name} holds values of mixed kinds ({str(exc).splitlines()[0]})",
                subject=str(path),
                fix=_FIX,
            ) from None
    return out
