"""Write a LeRobot v3 dataset from TED episodes with lerobot's own writer, on both cores.

The episodes are split into contiguous groups, one per worker process; each writes a LeRobot
dataset of its own (``create``, ``add_frame``, ``save_episode``, ``finalize``) and lerobot's
``aggregate_datasets`` joins them in order, so the layout is LeRobot's. Everything happens in a
staging folder that is renamed into place at the end: a failure leaves nothing behind.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from episode_warehouse.atomic import publish, remove_debris, staging_path, write_lock
from episode_warehouse.errors import ExportError, PartitionKeyError

log = logging.getLogger(__name__)
EXPORT_META = "meta/warehouse_export.json"


_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")


def check_export_name(name: str) -> str:
    """Export names become folder names and partition keys: letters, digits, ``_ . -``.

    Raises:
        PartitionKeyError: any other name.
    """
    if not _NAME_RE.match(name or ""):
        raise PartitionKeyError(
            "not a valid export name",
            subject=repr(name),
            fix="use letters, digits, '_', '.' and '-' (e.g. pong-top10)",
        )
    return name


@dataclass(frozen=True)
class ExportRequest:
    """What to export: ``episodes`` rows (source, partition, episode, start, length)."""

    name: str
    root: str
    episodes: list[tuple[str, str, int, int, int]]
    video: bool = False
    query: str | None = None
    lineage: dict = field(default_factory=dict)

    @property
    def repo_id(self) -> str:
        return f"episode-warehouse/{self.name.replace('/', '_')}"

    def fingerprint(self) -> dict:
        return {
            "episodes": [list(e) for e in self.episodes],
            "video": self.video,
            "query": self.query,
        }


def _task(source: str, partition: str, tasks: list[str], task_index: int | None) -> str:
    if source == "atari":
        return partition.split("/")[0]
    return tasks[task_index] if task_index is not None and tasks else ""


def _write_part(request: ExportRequest, rows: list, out: Path) -> int:
    """One worker: a LeRobot dataset of ``rows`` at ``out``; returns frames written."""
    import json as _json

    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    from episode_warehouse.export.features import features_for, fps_for, frames_of
    from episode_warehouse.paths import WarehouseLayout
    from episode_warehouse.ted.reader import open_ted_folder

    layout = WarehouseLayout(Path(request.root))
    source, partition = rows[0][0], rows[0][1]
    ted_dir = layout.ted_dir(source, partition)
    td = open_ted_folder(ted_dir)
    feats = features_for(td, source, request.video)
    dataset = LeRobotDataset.create(
        request.repo_id,
        fps=fps_for(source, partition),
        features=feats,
        root=out,
        use_videos=request.video,
        robot_type=source,
    )
    frames = 0
    opened = {(source, partition): (td, _json.loads((ted_dir / "meta.json").read_text()))}
    for src, part, _, start, length in rows:
        if (src, part) not in opened:
            folder = layout.ted_dir(src, part)
            opened[(src, part)] = (
                open_ted_folder(folder),
                _json.loads((folder / "meta.json").read_text()),
            )
        ted, meta = opened[(src, part)]
        episode = ted[start : start + length]
        has_task = "task_index" in episode.keys()  # noqa: SIM118 - TensorDict needs keys()
        task_index = int(episode["task_index"][0]) if has_task else None
        task = _task(src, part, meta.get("tasks", []), task_index)
        for frame in frames_of(episode, src, feats):
            frame["task"] = task
            dataset.add_frame(frame)
        dataset.save_episode()
        frames += length
    dataset.finalize()
    return frames


def _run_part(request: ExportRequest, rows: list, out: Path) -> int:
    """Run :func:`_write_part` in a plain worker process (robust inside any host process)."""
    job = out.with_name(out.name + ".json")
    job.write_text(json.dumps({"request": asdict(request), "rows": rows, "out": str(out)}))
    proc = subprocess.run(
        [sys.executable, "-m", "episode_warehouse.export.lerobot", str(job)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise ExportError(
            f"an export worker failed: {proc.stderr.strip()[-800:]}", subject=request.name
        )
    return int(proc.stdout.strip().splitlines()[-1])


def _split(episodes: list, parts: int) -> list[list]:
    """Contiguous groups of roughly equal frame counts, in order."""
    total = sum(e[4] for e in episodes)
    groups: list[list] = [[]]
    acc = 0
    for e in episodes:
        if acc >= total * len(groups) / parts and len(groups) < parts:
            groups.append([])
        groups[-1].append(e)
        acc += e[4]
    return [g for g in groups if g]


def export_lerobot(request: ExportRequest, target: Path, *, workers: int = 2) -> dict:
    """Export ``request`` to ``target`` (a LeRobot dataset root); return the export metadata.

    Idempotent: a target holding the same export (same episodes, mode and query) is kept.

    Raises:
        ExportError: no episode, mixed sources, or a target holding a different dataset.
    """
    from lerobot.datasets.aggregate import aggregate_datasets

    check_export_name(request.name)
    if not request.episodes:
        raise ExportError(
            "nothing to export: the selection has no episode",
            subject=request.name,
            fix="loosen the selection",
        )
    if len({e[0] for e in request.episodes}) > 1:
        raise ExportError(
            "a LeRobot dataset holds one source's features; the selection mixes atari and openx",
            subject=request.name,
            fix="export each source separately",
        )
    target = Path(target)
    with write_lock(target):
        existing = target / EXPORT_META
        if existing.is_file():
            if json.loads(existing.read_text()).get("fingerprint") == request.fingerprint():
                return json.loads(existing.read_text())
            if not (target / "meta" / "info.json").is_file():
                raise ExportError(
                    "the destination holds something else",
                    subject=str(target),
                    fix="choose another export name or remove the folder",
                )
        elif target.exists():
            raise ExportError(
                "the destination already holds a dataset this warehouse did not write",
                subject=str(target),
                fix="choose another export name or remove the folder",
            )
        remove_debris(target)
        staging = staging_path(target)
        parts_dir = staging_path(target.with_name(target.name + "-parts"))
        try:
            groups = _split(list(request.episodes), max(1, workers))
            roots = [parts_dir / f"part-{i}" for i in range(len(groups))]
            if len(groups) == 1:
                frames = [_write_part(request, groups[0], staging)]
            else:
                parts_dir.mkdir(parents=True)
                with ThreadPoolExecutor(len(groups)) as pool:
                    frames = list(pool.map(_run_part, [request] * len(groups), groups, roots))
                aggregate_datasets(
                    [request.repo_id] * len(groups), request.repo_id, roots=roots, aggr_root=staging
                )
            meta = {
                "name": request.name,
                "frames": sum(frames),
                "episodes": len(request.episodes),
                "fingerprint": request.fingerprint(),
                "request": {k: v for k, v in asdict(request).items() if k != "episodes"},
                "episode_list": [list(e) for e in request.episodes],
            }
            (staging / EXPORT_META).write_text(json.dumps(meta, indent=1))
            publish(staging, target)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        finally:
            shutil.rmtree(parts_dir, ignore_errors=True)
    log.info("exported %d episodes (%d frames) to %s", meta["episodes"], meta["frames"], target)
    return meta


if __name__ == "__main__":
    _job = json.loads(Path(sys.argv[1]).read_text())
    _req = ExportRequest(
        **{**_job["request"], "episodes": [tuple(e) for e in _job["request"]["episodes"]]}
    )
    # the worker protocol: the frame count, last line of stdout
    sys.stdout.write(f"{_write_part(_req, [tuple(r) for r in _job['rows']], Path(_job['out']))}\n")
