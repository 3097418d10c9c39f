"""The episodes of an export: where each one's TED rows are, and its task string."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tensordict import TensorDictBase

from episode_warehouse.errors import ExportError
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

    opened: dict[tuple[str, str], tuple[Path, TedRecord, TensorDictBase]] = {}
    out = []
    for source, partition, _, start, length in rows:
        if (source, partition) not in opened:
            reader = TedReader.of(root, source, partition)
            folder = reader.folder()
            opened[(source, partition)] = (folder, reader.meta, reader.whole())
        folder, meta, ted = opened[(source, partition)]
        task = _task(source, partition, meta, ted[start : start + 1])
        out.append(ExportEpisode(source, partition, folder, meta, ted, start, length, task))
    return out


def create_dataset(repo_id: str, episodes: list[ExportEpisode], out: Path, video: bool):
    """A new, empty ``LeRobotDataset`` at ``out`` with the features of ``episodes``' source."""
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    from episode_warehouse.export.features import features_for
    from episode_warehouse.sources import registry
    from episode_warehouse.ted.cameras import declared_images

    first = episodes[0]
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
    if out.is_dir() and not any(out.iterdir()):
        out.rmdir()  # lerobot creates the dataset root itself (an empty staging folder here)
    return LeRobotDataset.create(
        repo_id,
        fps=int(fps),
        features=features_for(
            first.ted,
            video,
            first.meta.extra.get("feature_names"),
            declared_images(first.meta),
            first.meta.extra.get("texts"),
        ),
        root=out,
        use_videos=video,
        robot_type=first.meta.robot_type or first.source,
    )
