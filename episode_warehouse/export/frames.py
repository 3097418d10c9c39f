"""Where an export's PNG frames are written, and the jobs that write them.

Each image feature of each episode is split into jobs of at most ``CHUNK_FRAMES`` frames, named
in lerobot's image layout (``images/<feature>/episode-<i>/frame-<j>.png``) under a scratch root.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from episode_warehouse.export.episodes import ExportEpisode
from episode_warehouse.export.png_writer import SCRATCH_SETTING
from episode_warehouse.export.schema import ExportSchema
from episode_warehouse.guards.names import no_links_below

SHM = Path("/dev/shm")  # memory-backed scratch, where the system has one
_SCRATCH_PREFIX = "episode-warehouse-frames-"


def scratch_bytes(episodes: list[ExportEpisode], features: dict, ahead: int) -> int:
    """An upper bound of the PNG bytes waiting at once: ``ahead`` of the longest episodes
    (a PNG of a frame is at most its raw size, plus headers)."""
    frame = sum(
        int(np.prod(ft["shape"])) + 1024
        for ft in features.values()
        if ft["dtype"] in ("image", "video")
    )
    longest = sorted((e.length for e in episodes), reverse=True)[:ahead]
    return frame * sum(longest)


def scratch_root(staging: Path, video: bool, need: int, scratch_dir: Path | None) -> Path:
    """Where the workers write PNG files.

    lerobot encodes videos from ``<staging>/images`` (and deletes the frames), so video frames
    go there. Lossless frames only live until lerobot has embedded them: they go to
    ``scratch_dir`` when one is set, else to memory (``/dev/shm``: creating a file there costs
    ~10x less) when it has room for ``need`` bytes twice over (containers give it 64 MiB), else
    to the staging folder.
    """
    if video:
        return staging
    base = scratch_dir
    if base is None:
        usable = SHM.is_dir() and os.access(SHM, os.W_OK)
        if not usable or shutil.disk_usage(SHM).free < 2 * need:
            return staging
        base = SHM
    no_links_below(base, setting=SCRATCH_SETTING)
    base.mkdir(parents=True, exist_ok=True)
    for stale in base.glob(_SCRATCH_PREFIX + "*"):
        pid = stale.name.removeprefix(_SCRATCH_PREFIX).split("-")[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists() and not stale.is_symlink():
            shutil.rmtree(stale, ignore_errors=True)  # left by a killed export
    return Path(tempfile.mkdtemp(prefix=f"{_SCRATCH_PREFIX}{os.getpid()}-", dir=base))


CHUNK_FRAMES = 256  # frames per PNG job: episodes are split so that workers share them


def png_jobs(episode: ExportEpisode, index: int, scratch: Path, schema: ExportSchema) -> list[dict]:
    """The PNG jobs of episode ``index`` of the export, in lerobot's image layout."""
    from lerobot.datasets.utils import DEFAULT_IMAGE_PATH

    features = schema.features
    jobs = []
    for key, (file, layout) in schema.image_sources(episode).items():
        first = scratch / DEFAULT_IMAGE_PATH.format(
            image_key=key, episode_index=index, frame_index=0
        )
        for offset in range(0, episode.length, CHUNK_FRAMES):
            jobs.append(
                {
                    "key": key,
                    "ted": str(episode.ted_dir),
                    "file": file,
                    "start": episode.start + offset,
                    "length": min(CHUNK_FRAMES, episode.length - offset),
                    "first_frame": offset,
                    "layout": layout,
                    "dir": str(first.parent),
                    "pattern": first.name.replace("000000", "{frame_index:06d}"),
                    # what add_frame uses: 6 for lossless images, 1 for frames that become video
                    "compress_level": 1 if features[key]["dtype"] == "video" else 6,
                }
            )
    return jobs


def frame_paths(jobs: list[dict], length: int) -> dict[str, list[str]]:
    """Image feature -> the episode's PNG paths, frame by frame."""
    folders = {job["key"]: (Path(job["dir"]), job["pattern"]) for job in jobs}
    return {
        key: [str(folder / pattern.format(frame_index=i)) for i in range(length)]
        for key, (folder, pattern) in folders.items()
    }
