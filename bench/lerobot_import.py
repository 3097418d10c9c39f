"""Benchmark: a LeRobot v3.0 dataset (PNG images; AV1 video) into TED (decoded episodes + TED
build) against reading every frame through ``LeRobotDataset.__getitem__`` (what a user would
otherwise do), same dataset, same run. Goal: >= 5x frames/s, heap bounded by one data file.

    python -m bench.lerobot_import     # writes bench/data/lerobot-import (lerobot's own writer)
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from pathlib import Path

from bench.measure import save_report, scaled

DATA = Path(__file__).parent / "data" / "lerobot-import-scene"
EPISODES, LENGTH = scaled(50, 3), scaled(100, 10)  # 5,000 frames
CAMERAS = {"top": (96, 128), "wrist": (64, 64)}


def main() -> None:
    logging.basicConfig(level=logging.WARNING)
    report = {
        "png": measure("png", EPISODES, LENGTH, CAMERAS, video=False),
        "video": measure(
            "video",
            scaled(20, 2),
            scaled(150, 10),
            {"top": (96, 128), "wrist": (64, 64)},
            video=True,
        ),  # fmt: skip
    }
    print(json.dumps(report, indent=1))
    save_report("lerobot_import", report)


def measure(name: str, episodes: int, length: int, cameras: dict, *, video: bool) -> dict:
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    from episode_warehouse.decoded import open_decoded
    from episode_warehouse.incremental import build_if_changed
    from episode_warehouse.sources.lerobot.dataset import open_lerobot_folder
    from episode_warehouse.sources.lerobot.decode import decode_lerobot
    from episode_warehouse.storage.local import LocalRoot
    from episode_warehouse.ted import build_ted
    from warehouse_fixtures.lerobot_writer import LeRobotSpec, write_lerobot_dataset

    spec = LeRobotSpec(
        repo_id=f"bench/{name}",
        lengths=(length,) * episodes,
        cameras=cameras,
        data_files_size_in_mb=20,
        frames="scene",  # compresses as camera frames do (noise: ~2.5-2.8x, see the docs)
        video=video,
    )
    folder = DATA / spec.repo_id
    if not (folder / "meta" / "info.json").exists():
        write_lerobot_dataset(spec, DATA)
    work = DATA / f"work-{name}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()

    t = time.perf_counter()
    source = open_lerobot_folder(folder)
    build_if_changed(
        LocalRoot(work), work / "dec", {"bench": 1}, lambda tmp: decode_lerobot(source, tmp)
    )
    (work / "ted").mkdir()
    build_ted(open_decoded(work / "dec"), work / "ted")
    ours = time.perf_counter() - t

    dataset = LeRobotDataset(spec.repo_id, root=folder)
    t = time.perf_counter()
    for i in range(len(dataset)):
        dataset[i]
    theirs = time.perf_counter() - t
    frames = len(dataset)
    return {
        "frames": frames,
        "cameras": {k: list(v) for k, v in cameras.items()},
        "ours_s": round(ours, 2),
        "ours_frames_per_s": round(frames / ours),
        "lerobot_getitem_s": round(theirs, 2),
        "lerobot_getitem_frames_per_s": round(frames / theirs),
        "ratio_vs_lerobot": round(theirs / ours, 2),
    }


if __name__ == "__main__":
    main()
