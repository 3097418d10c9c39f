"""Where an export's PNG frames are written, and the jobs that write them.

Each image feature of each episode is split into jobs of at most ``CHUNK_FRAMES`` frames, named
in lerobot's image layout (``images/<feature>/episode-<i>/frame-<j>.png``) under a scratch root.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from episode_warehouse.export.episodes import ExportEpisode

SHM = Path("/dev/shm")  # memory-backed scratch, where the system has one
_SCRATCH_PREFIX = "episode-warehouse-frames-"


def scratch_root(staging: Path, video: bool) -> Path:
    """Where the workers write PNG files: lerobot encodes videos from ``<root>/images`` (and
    deletes the frames); lossless frames only live until lerobot has embedded them, so they go
    to memory (``/dev/shm``) where there is one: creating a file there costs ~10x less.
    """
    if video or not (SHM.is_dir() and os.access(SHM, os.W_OK)):
        return staging
    for stale in SHM.glob(_SCRATCH_PREFIX + "*"):
        pid = stale.name.removeprefix(_SCRATCH_PREFIX).split("-")[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(stale, ignore_errors=True)  # left by a killed export
    return Path(tempfile.mkdtemp(prefix=f"{_SCRATCH_PREFIX}{os.getpid()}-", dir=SHM))


CHUNK_FRAMES = 256  # frames per PNG job: episodes are split so that workers share them


def png_jobs(episode: ExportEpisode, index: int, scratch: Path, features: dict) -> list[dict]:
    """The PNG jobs of episode ``index`` of the export, in lerobot's image layout."""
    from lerobot.datasets.utils import DEFAULT_IMAGE_PATH

    from episode_warehouse.export.features import image_sources

    jobs = []
    for key, (file, layout) in image_sources(episode.meta, episode.source, features).items():
        first = scratch / DEFAULT_IMAGE_PATH.format(
            image_key=key, episode_index=index, frame_index=0
        )
        for offset in range(0, episode.length, CHUNK_FRAMES):
            jobs.append(
                {
                    "key": key,
                    "file": str(episode.ted_dir / file),
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
