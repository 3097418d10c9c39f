"""Benchmark: the trainer data plane against its named baselines, measured in the same run.

- Step windows: ``StepWindowDataset`` (4 observation frames, 16 actions, batches of 256 random
  steps) against LeRobot's ``delta_timestamps`` on our LeRobot export of the same episodes
  (``LeRobotDataset`` in a ``DataLoader``, batch 256): samples/s. Goal >= 10x.
- Statistics: ``selection_stats`` over a >1M-step selection from the statistics asset's rows
  (goal < 1 s), and the full pass over the same steps against one sequential read of the same
  columns (goal within 2x).

    python -m bench.data_plane     # uses (or writes) bench/data/loading (bench.loading's TED)
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from pathlib import Path

import numpy as np

from bench.measure import save_report, scaled

BATCH, BATCHES = scaled(256, 16), scaled(8, 1)
KEYS = ["observation", "action", ("next", "reward")]
COPIES = 4  # partitions linking the same 300k-step TED: a 1.2M-step selection
WORK = Path(__file__).parent / "data" / "data_plane"


def _root_with_copies() -> Path:
    """A warehouse root whose Pong/1..COPIES are the loading bench's TED: its files linked, and a
    record with a version, as the TED asset publishes it."""
    from bench.loading import prepared
    from episode_warehouse.atomic import write_json

    ted = (prepared() / "ted").resolve()  # built where bench.loading has not run yet
    root = WORK / "root"
    for n in range(1, COPIES + 1):
        folder = root / "ted" / "atari" / "Pong" / str(n)
        if (folder / "meta.json").exists():
            continue
        for path in ted.rglob("*"):
            if path.is_file() and path.name != "meta.json":
                link = folder / path.relative_to(ted)
                link.parent.mkdir(parents=True, exist_ok=True)
                link.symlink_to(path)
        meta = json.loads((ted / "meta.json").read_text())
        write_json(folder / "meta.json", {**meta, "version": "bench-300k"})
    return root


def _rows(root: Path, partitions: list[str], episodes: int | None = None) -> list[tuple]:
    import pyarrow.parquet as pq

    eps = pq.read_table(root / "ted" / "atari" / "Pong" / "1" / "episodes.parquet").to_pylist()
    eps = eps[:episodes] if episodes else eps
    return [("atari", p, e["episode"], e["start"], e["length"]) for p in partitions for e in eps]


def windows(root: Path, report: dict) -> None:
    import torch
    from torch.utils.data import DataLoader

    from episode_warehouse.export.lerobot import ExportRequest, export_lerobot
    from episode_warehouse.loading import Selection, StepWindowDataset
    from episode_warehouse.sources import registry

    selection = Selection.from_rows(_rows(root, ["Pong/1"], episodes=8), root)
    target = WORK / "lerobot" / "pong-8"
    export_lerobot(ExportRequest("pong-8", str(root), selection.rows()), target, workers=2)
    fps = registry.fps("atari", "Pong/1")
    deltas = {"observation": [-3, -2, -1, 0], "action": list(range(16))}
    ours = StepWindowDataset(selection, deltas)
    rng = np.random.default_rng(0)
    ours.__getitems__(rng.integers(0, len(ours), BATCH).tolist())  # warm-up
    t = time.perf_counter()
    for _ in range(BATCHES * 4):
        batch = ours.__getitems__(rng.integers(0, len(ours), BATCH).tolist())
    ours_rate = BATCHES * 4 * BATCH / (time.perf_counter() - t)
    assert batch["observation"].shape == (BATCH, 4, 84, 84)

    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    theirs = LeRobotDataset(
        "episode-warehouse/pong-8",
        root=target,
        delta_timestamps={
            "observation.image": [d / fps for d in deltas["observation"]],
            "action": [d / fps for d in deltas["action"]],
        },
    )
    loader = iter(
        DataLoader(
            theirs, batch_size=BATCH, shuffle=True, generator=torch.Generator().manual_seed(0)
        )
    )
    first = next(loader)  # warm-up
    assert first["observation.image"].shape[:2] == (BATCH, 4)
    t = time.perf_counter()
    for _ in range(BATCHES):
        next(loader)
    theirs_rate = BATCHES * BATCH / (time.perf_counter() - t)
    report.update(
        window_steps=len(ours),
        windows_ours_samples_per_s=round(ours_rate),
        windows_lerobot_delta_timestamps_samples_per_s=round(theirs_rate),
        windows_ratio_vs_lerobot=round(ours_rate / theirs_rate, 1),
    )


def statistics(root: Path, report: dict) -> None:
    from episode_warehouse.catalog.statistics import publish_statistics
    from episode_warehouse.loading import Selection, selection_stats
    from episode_warehouse.paths import WarehouseLayout
    from episode_warehouse.ted import open_ted_folder
    from episode_warehouse.ted.statistics import _read

    layout = WarehouseLayout.local(root)
    parts = [f"Pong/{n}" for n in range(1, COPIES + 1)]
    shutil.rmtree(layout.catalog_dir, ignore_errors=True)  # time the asset's work, not a no-op
    t = time.perf_counter()
    for p in parts:
        publish_statistics(layout, "atari", p, code_version="bench")
    report["statistics_asset_s_per_partition"] = round((time.perf_counter() - t) / COPIES, 2)
    selection = Selection.from_rows(_rows(root, parts), root)
    report["selection_steps"] = int(selection.length.sum())

    t = time.perf_counter()
    stored = selection_stats(selection, KEYS)
    report["stats_from_catalog_s"] = round(time.perf_counter() - t, 3)

    td = open_ted_folder(root / "ted" / "atari" / "Pong" / "1")
    t = time.perf_counter()
    for i in range(len(selection)):  # the baseline: read every selected step of every key once
        for key in KEYS:
            np.array(_read(td, key, int(selection.start[i]), int(selection.length[i])))
    read_s = time.perf_counter() - t
    t = time.perf_counter()
    full = selection_stats(selection, KEYS, use_catalog=False)
    full_s = time.perf_counter() - t
    for key in KEYS:
        np.testing.assert_allclose(stored[key]["mean"], full[key]["mean"], rtol=1e-9)
    report.update(
        stats_sequential_read_s=round(read_s, 2),
        stats_full_pass_s=round(full_s, 2),
        stats_full_pass_ratio_vs_read=round(full_s / read_s, 2),
    )


def main() -> None:
    logging.basicConfig(level=logging.WARNING)
    root = _root_with_copies()
    report: dict = {}
    for part in (windows, statistics):
        part(root, report)
        print(json.dumps(report), flush=True)
    print(json.dumps(report, indent=1))
    save_report("data_plane", report)


if __name__ == "__main__":
    main()
