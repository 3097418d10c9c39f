"""Benchmark: local Dopamine gz checkpoints -> ready TED, ours against TorchRL on the same files.

Baseline: TorchRL's ``AtariDQNExperienceReplay._preproc_run`` (what its dataset class runs on
each downloaded run). Physical limit: plain gzip inflate of the same observation files, with
zlib (Python's gzip, 8 MiB reads) and with ISA-L. Throughput counts input frames (C per
checkpoint file) for both pipelines, so they are measured on the same work.

    python -m bench.atari_decode                         # 3 checkpoints of C = 100,000
    python -m bench.atari_decode --capacity 1000000 --checkpoints 1     # real capacity
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.measure import dispatch, run_child, save_report, scaled

DATA = Path(__file__).parent / "data"
FRAME = 84 * 84


def make_files(capacity: int, checkpoints: int) -> Path:
    """Write (once) a run with ``checkpoints`` regular logs of capacity C, like Dopamine."""
    from warehouse_fixtures.atari_game import play_episode
    from warehouse_fixtures.dopamine_writer import LoggedReplayBufferWriter

    folder = DATA / f"atari-C{capacity}-n{checkpoints}" / "replay_logs"
    if (folder / "done").exists():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    rng = np.random.default_rng(0)
    writer = LoggedReplayBufferWriter(folder, capacity, garbage_seed=None, keep_episodes=False)
    while writer.log_count < checkpoints:
        writer.add_episode(play_episode(rng, int(rng.integers(200, 1200))))
    (folder / "done").write_text("")
    return folder


def inflate_rate(files: list[Path], which: str) -> float:
    """Frames per second of plain inflate, one core, reading 8 MiB at a time."""
    from isal import igzip

    opener = gzip.open if which == "zlib" else igzip.open
    total = 0
    started = time.perf_counter()
    for path in files:
        with opener(path, "rb") as fh:
            while chunk := fh.read(8 << 20):
                total += len(chunk)
    return total / FRAME / (time.perf_counter() - started)


def child_ours(replay: str, out: str, workers: str) -> None:
    import pandas  # noqa: F401 - pyarrow imports it on first use; keep it out of compute_s

    from episode_warehouse.catalog.rows import folder_bytes
    from episode_warehouse.decoded import open_decoded
    from episode_warehouse.sources.atari.decode import decode_run
    from episode_warehouse.ted import build_ted

    suffixes = sorted(int(p.name.split(".")[1]) for p in Path(replay).glob("add_count_ckpt.*"))
    dec, ted = Path(out) / "dec", Path(out) / "ted"
    dec.mkdir(parents=True)
    ted.mkdir()
    started = time.perf_counter()
    decode_run(Path(replay), suffixes, dec, workers=int(workers))
    meta = build_ted(open_decoded(dec), ted)
    compute = time.perf_counter() - started
    print(json.dumps({"rows": meta.rows, "ted_bytes": folder_bytes(ted), "compute_s": compute}))


def child_torchrl(replay: str, out: str) -> None:
    from torchrl.data.datasets.atari_dqn import AtariDQNExperienceReplay

    # as TorchRL's dataset class does: runs keyed by checkpoint suffix, one memmap folder each
    runs = AtariDQNExperienceReplay._list_runs(replay)
    started = time.perf_counter()
    for run in runs:
        AtariDQNExperienceReplay._preproc_run(Path(out) / str(run), runs, run)
    print(json.dumps({"checkpoints": len(runs), "compute_s": time.perf_counter() - started}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--capacity", type=int, default=scaled(100_000, 5000))
    parser.add_argument("--checkpoints", type=int, default=scaled(3, 1))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--skip-torchrl", action="store_true")
    args = parser.parse_args()

    folder = make_files(args.capacity, args.checkpoints)
    obs_files = sorted(folder.glob("$store$_observation_ckpt.*.gz"))
    frames_in = args.capacity * len(obs_files)
    gz_bytes = sum(p.stat().st_size for p in obs_files)
    zlib_fps = inflate_rate(obs_files, "zlib")
    isal_fps = inflate_rate(obs_files, "isal")
    report = {
        "capacity": args.capacity,
        "checkpoints": len(obs_files),
        "frames_in": frames_in,
        "gzip_ratio": round(frames_in * FRAME / gz_bytes, 1),
        "inflate_zlib_fps": round(zlib_fps),
        "inflate_isal_fps": round(isal_fps),
    }

    def settled(argv: list[str]):
        os.sync()  # let writeback of earlier outputs finish: it otherwise lands on this run
        time.sleep(2)
        return run_child("bench.atari_decode", argv)

    with tempfile.TemporaryDirectory(dir=DATA) as tmp:
        ours = settled(["_ours", str(folder), tmp + "/ours", str(args.workers)])
        cores = min(args.workers, len(obs_files))
        ours_fps = frames_in / ours.result["compute_s"]
        report.update(
            {
                "ours_wall_s": round(ours.seconds, 2),
                "ours_compute_s": round(ours.result["compute_s"], 2),
                "ours_fps": round(ours_fps),
                "ours_fps_per_core": round(ours_fps / cores),
                "cores_used": cores,
                "ours_per_core_vs_zlib_inflate": round(ours_fps / cores / zlib_fps, 2),
                "ours_per_core_vs_isal_inflate": round(ours_fps / cores / isal_fps, 2),
                "ours_peak_anon_mb": round(ours.peak_anon_mb),
                "ours_vm_hwm_mb": round(ours.vm_hwm_mb),
                "ted_rows": ours.result["rows"],
                "ted_bytes_vs_unique_frames": round(
                    ours.result["ted_bytes"] / (ours.result["rows"] * FRAME), 3
                ),
            }
        )
        if not args.skip_torchrl:
            ref = settled(["_torchrl", str(folder), tmp + "/torchrl"])
            report.update(
                {
                    "torchrl_wall_s": round(ref.seconds, 2),
                    "torchrl_compute_s": round(ref.result["compute_s"], 2),
                    "torchrl_fps": round(frames_in / ref.result["compute_s"]),
                    "torchrl_peak_anon_mb": round(ref.peak_anon_mb),
                    "torchrl_vm_hwm_mb": round(ref.vm_hwm_mb),
                    "speedup_vs_torchrl_compute": round(
                        ref.result["compute_s"] / ours.result["compute_s"], 2
                    ),
                    "speedup_vs_torchrl_wall": round(ref.seconds / ours.seconds, 2),
                }
            )
    for key, value in report.items():
        print(f"{key:32s} {value}")
    save_report(f"atari_decode_C{args.capacity}", report)


if __name__ == "__main__":
    dispatch({"_ours": child_ours, "_torchrl": child_torchrl}, main)
