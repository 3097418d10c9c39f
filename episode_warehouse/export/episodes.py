"""The episodes of an export: where each one's TED rows are, and its task string."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from tensordict import TensorDictBase

from episode_warehouse.storage import Root
from episode_warehouse.ted.record import TedRecord


@dataclass(frozen=True)
class ExportEpisode:
    """Rows ``[start, start + length)`` of the TED in ``ted_dir``, with the episode's task."""

    source: str
    partition: str
    ted_dir: Path
    meta: TedRecord
    ted: TensorDictBase
    start: int
    length: int
    task: str
    metadata: dict  # the episode's own values (the TED episode table's episode_metadata)

    def steps(self) -> TensorDictBase:
        return self.ted[self.start : self.start + self.length]


def _task(source: str, partition: str, meta: TedRecord, steps: TensorDictBase) -> str:
    """The partition's task where the source has one (Atari: the game), else the episode's
    instruction (``task_index`` into the TED's ``tasks``)."""
    from episode_warehouse.sources import registry

    task = registry.partition_task(source, partition)
    if task is not None:
        return task
    tasks = meta.tasks
    if "task_index" not in steps.keys() or not tasks:  # noqa: SIM118 - TensorDict needs keys()
        return ""
    return tasks[int(steps["task_index"][0])]


def export_episodes(root: Root, rows: list[tuple[str, str, int, int, int]]) -> list[ExportEpisode]:
    """``rows`` (source, partition, episode, start, length) with their TEDs opened once each
    (through their readers: a bucket's are fetched into the reader cache)."""
    from episode_warehouse.ted.reader import TedReader

    opened: dict[tuple[str, str], tuple[Path, TedRecord, TensorDictBase, dict]] = {}
    out = []
    for source, partition, episode, start, length in rows:
        if (source, partition) not in opened:
            reader = TedReader.of(root, source, partition)
            folder = reader.folder()
            metadata = _episode_metadata(reader.episodes())
            opened[(source, partition)] = (folder, reader.meta, reader.whole(), metadata)
        folder, meta, ted, metadata = opened[(source, partition)]
        task = _task(source, partition, meta, ted[start : start + 1])
        out.append(ExportEpisode(source, partition, folder, meta, ted, start, length, task,
                                 metadata.get(int(episode), {})))  # fmt: skip
    return out


def _episode_metadata(episodes) -> dict[int, dict]:
    """Episode -> its ``episode_metadata`` (JSON in the TED episode table; sources without
    per-episode values have none)."""
    if "episode_metadata" not in episodes.column_names:
        return {}
    ids = episodes.column("episode").to_pylist()
    values = episodes.column("episode_metadata").to_pylist()
    return {int(e): json.loads(v) if v else {} for e, v in zip(ids, values, strict=True)}


def create_dataset(repo_id: str, schema, out: Path, video: bool):
    """A new, empty ``LeRobotDataset`` at ``out`` with ``schema``'s features, fps and robot type
    (``schema``: :class:`~episode_warehouse.export.schema.ExportSchema`)."""
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    if out.is_dir() and not any(out.iterdir()):
        out.rmdir()  # lerobot creates the dataset root itself (an empty staging folder here)
    return LeRobotDataset.create(
        repo_id,
        fps=schema.fps,
        features=schema.features,
        root=out,
        use_videos=video,
        robot_type=schema.robot_type,
    )
