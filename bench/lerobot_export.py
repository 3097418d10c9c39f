"""Benchmark: TED -> LeRobot v3 (lossless PNG), ours (one process; and two worker processes
joined by lerobot's aggregate_datasets) against
the single-process per-frame path (add_frame for every frame, save_episode per episode, as
TorchRL's LeRobot adapter does), on the same episodes in the same run.

    python -m bench.lerobot_export [--frames 12000]
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

from bench.atari_decode import DATA
from bench.measure import save_report


def per_frame_baseline(root: Path, rows: list, out: Path) -> float:
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    from episode_warehouse.export.features import features_for, frames_of
    from episode_warehouse.ted.reader import open_ted_folder

    td = open_ted_folder(root / "ted" / "atari" / "Pong" / "1")
    feats = features_for(td, "atari", video=False)
    t = time.perf_counter()
    ds = LeRobotDataset.create(
        "bench/per-frame", fps=15, features=feats, root=out, use_videos=False
    )
    for _, _, _, start, length in rows:
        for frame in frames_of(td[start : start + length], "atari", feats):
            frame["task"] = "Pong"
            ds.add_frame(frame)
        ds.save_episode()
    ds.finalize()
    return time.perf_counter() - t


def main() -> None:
    import pyarrow.parquet as pq

    from episode_warehouse.export import ExportRequest, export_lerobot

    parser = argparse.ArgumentParser()
    parser.add_argument("--frames", type=int, default=12_000)
    args = parser.parse_args()
    root = DATA / "loading" / "root"  # written by bench.loading (a 300k-frame Atari TED)
    if not (root / "ted" / "atari" / "Pong" / "1" / "meta.json").exists():
        raise SystemExit("run `python -m bench.loading` first (it builds the TED used here)")
    eps = pq.read_table(root / "ted" / "atari" / "Pong" / "1" / "episodes.parquet").to_pylist()
    rows, total = [], 0
    for e in eps:
        if total >= args.frames:
            break
        rows.append(("atari", "Pong/1", e["episode"], e["start"], e["length"]))
        total += e["length"]
    out = DATA / "export-bench"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    base_s = per_frame_baseline(root, rows, out / "baseline")
    report = {
        "episodes": len(rows),
        "frames": total,
        "per_frame_baseline_s": round(base_s, 1),
        "baseline_fps": round(total / base_s),
    }
    for workers in (1, 2):
        t = time.perf_counter()
        export_lerobot(
            ExportRequest(f"bench{workers}", str(root), rows), out / f"w{workers}", workers=workers
        )
        ours_s = time.perf_counter() - t
        report[f"ours_{workers}_workers_s"] = round(ours_s, 1)
        report[f"ours_{workers}_workers_fps"] = round(total / ours_s)
        report[f"speedup_{workers}_workers"] = round(base_s / ours_s, 2)
    shutil.rmtree(out, ignore_errors=True)
    print(json.dumps(report, indent=1))
    save_report("lerobot_export", report)


if __name__ == "__main__":
    main()
