"""Benchmark: TED -> LeRobot v3 (lossless PNG): our export against the single-process per-frame
path (``add_frame`` for every frame, ``save_episode`` per episode, as TorchRL's LeRobot adapter
does), on the same episodes in the same run. Each writer runs in a child process of its own and
is timed after its imports; the datasets are compared byte for byte at the end.

    python -m bench.lerobot_export [--frames 12000]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time

from bench.atari_decode import DATA
from bench.measure import save_report, scaled


def _root():
    """bench.loading's warehouse root (a 300k-frame Atari TED; built if missing)."""
    from bench.loading import prepared

    return prepared() / "root"


OUT = DATA / "export-bench"
# variant -> (PNG worker processes, batched embedding); "per_frame" is the baseline
VARIANTS = {"ours_1_worker": (1, True), "ours_2_workers": (2, True), "ours_rowwise": (1, False)}


def _rows(frames: int) -> list:
    import pyarrow.parquet as pq

    eps = pq.read_table(_root() / "ted" / "atari" / "Pong" / "1" / "episodes.parquet").to_pylist()
    rows, total = [], 0
    for e in eps:
        if total >= frames:
            break
        rows.append(("atari", "Pong/1", e["episode"], e["start"], e["length"]))
        total += e["length"]
    return rows


def child(variant: str, frames: int) -> None:
    """Write one dataset; the seconds it took (imports excluded) are the last stdout line."""
    from lerobot.datasets.lerobot_dataset import LeRobotDataset  # noqa: F401 - import untimed

    from episode_warehouse.export import ExportRequest, export_lerobot
    from episode_warehouse.export.per_frame import write_per_frame

    rows = _rows(frames)
    t = time.perf_counter()
    if variant == "per_frame":
        write_per_frame("bench/per-frame", _root(), rows, OUT / variant)
    else:
        workers, batched = VARIANTS[variant]
        export_lerobot(
            ExportRequest(variant, str(_root()), rows),
            OUT / variant,
            workers=workers,
            batched_embedding=batched,
        )
    sys.stdout.write(f"{time.perf_counter() - t}\n")


def run(variant: str, frames: int) -> float:
    cmd = [sys.executable, "-m", "bench.lerobot_export", "--child", variant]
    proc = subprocess.run(
        [*cmd, "--frames", str(frames)], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise SystemExit(f"{variant} failed:\n{proc.stderr[-3000:]}")
    return float(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--frames", type=int, default=scaled(12_000, 600))
    parser.add_argument("--child", choices=["per_frame", *VARIANTS])
    args = parser.parse_args()
    if args.child:
        child(args.child, args.frames)
        return
    _root()  # built here where bench.loading has not run yet
    rows = _rows(args.frames)
    total = sum(r[4] for r in rows)
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    base_s = run("per_frame", args.frames)
    report: dict = {
        "episodes": len(rows),
        "frames": total,
        "per_frame_baseline_s": round(base_s, 2),
        "per_frame_baseline_fps": round(total / base_s),
    }
    for variant in VARIANTS:
        s = run(variant, args.frames)
        report[f"{variant}_s"] = round(s, 2)
        report[f"{variant}_fps"] = round(total / s)
        report[f"{variant}_vs_baseline"] = round(base_s / s, 2)
    from episode_warehouse.export.compare import differing_files

    report["files_differing_from_baseline"] = {
        v: differing_files(OUT / "per_frame", OUT / v) for v in VARIANTS
    }
    shutil.rmtree(OUT, ignore_errors=True)
    print(json.dumps(report, indent=1))
    save_report("lerobot_export", report)


if __name__ == "__main__":
    main()
