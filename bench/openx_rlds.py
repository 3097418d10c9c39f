"""Benchmark: RLDS shards -> decoded episodes on 2 cores, against the image decode limit and
against ``tfds.load`` to numpy, on the same files.

Baselines, each measured in this run on the same 2 cores (``sched_setaffinity``):
- the image decode limit: every JPEG of the dataset, extracted beforehand, decoded with the
  same decoder (torchvision) on the same thread pool; the decoder cannot go faster than this.
- ``tfds.load`` (``builder_from_directory(...).as_dataset``, iterated with ``tfds.as_numpy``,
  images decoded): only with ``--tfds-python``, an interpreter where tensorflow-datasets is
  installed (it is not one of the project's dependencies).
Peak heap (RssAnon) is reported for two dataset sizes: it must not grow with the dataset.

    python -m bench.openx_rlds [--episodes 40] [--steps 60] [--tfds-python /tmp/tfenv/bin/python]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.measure import dispatch, run_child, save_report

DATA = Path(__file__).parent / "data"
HEIGHT, WIDTH = 256, 320  # fractal20220817_data's camera; bridge's is 480x640
PER_SHARD = 10


def _pin_two_cores() -> int:
    cores = sorted(os.sched_getaffinity(0))[:2]
    os.sched_setaffinity(0, cores)
    return len(cores)


def make_dataset(episodes: int, steps: int) -> Path:
    from warehouse_fixtures import rlds_writer as w

    root = DATA / f"rlds-{episodes}-{steps}"
    if (root / "done").exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    features = w.episode_features(
        {
            "observation": w.features_dict(
                {
                    "image": w.image((HEIGHT, WIDTH, 3), "uint8", "jpeg"),
                    "state": w.tensor((7,), "float32"),
                }  # fmt: skip
            ),
            "action": w.features_dict(
                {"world_vector": w.tensor((3,), "float32"), "gripper": w.tensor((), "float32")}
            ),
            "reward": w.tensor((), "float32", scalar=True),
            "is_first": w.tensor((), "bool"),
            "is_last": w.tensor((), "bool"),
            "is_terminal": w.tensor((), "bool"),
            "language_instruction": w.text(),
        },
        episode_metadata=w.features_dict({"file_path": w.text()}),
    )
    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:HEIGHT, 0:WIDTH]
    shards = []
    for start in range(0, episodes, PER_SHARD):
        shard = []
        for e in range(start, min(start + PER_SHARD, episodes)):
            out = []
            for t in range(steps):
                img = np.stack([(xx + 3 * t) % 256, (yy + e) % 256, (xx + yy) % 256], -1)
                img = (img + rng.integers(0, 24, img.shape)).clip(0, 255).astype(np.uint8)
                out.append(
                    {
                        "observation": {"image": img, "state": rng.normal(size=7)},
                        "action": {"world_vector": rng.normal(size=3), "gripper": 1.0},
                        "reward": float(t == steps - 1),
                        "is_first": t == 0,
                        "is_last": t == steps - 1,
                        "is_terminal": t == steps - 1,
                        "language_instruction": "pick up the can",
                    }
                )
            shard.append({"steps": out, "episode_metadata": {"file_path": f"ep{e}.h5"}})
        shards.append(shard)
    w.write_dataset(root, "bench_robot", "1.0.0", features, {"train": shards})
    (root / "done").write_text("")
    return root


def child_ours(root: str, out: str) -> None:
    import pyarrow.parquet  # noqa: F401 - imports are not part of the measured work
    import torchvision  # noqa: F401

    import episode_warehouse.sources.openx.rlds.decode  # noqa: F401
    from episode_warehouse.paths import WarehouseLayout
    from episode_warehouse.sources.openx.raw import mirror_openx
    from episode_warehouse.sources.openx.stage import decode_openx

    cores = _pin_two_cores()
    layout = WarehouseLayout(Path(out))
    mirror_openx(root, "bench_robot", layout.raw_dir("openx", "bench_robot"), code_version="b")
    started = time.perf_counter()
    built = decode_openx(layout, "bench_robot", code_version="b")
    seconds = time.perf_counter() - started
    print(json.dumps({"rows": built.meta["rows"], "compute_s": seconds, "cores": cores}))


def child_limit(root: str) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from episode_warehouse.sources.openx.images import decode_image_bytes
    from episode_warehouse.tfrecord.example import parse_example
    from episode_warehouse.tfrecord.records import iter_records
    from episode_warehouse.threads import compute_threads

    cores = _pin_two_cores()
    blobs = []
    for shard in sorted(Path(root, "bench_robot", "1.0.0").glob("*.tfrecord-*")):
        with open(shard, "rb") as fh:
            for _, data in iter_records(fh, shard.name):
                feature = parse_example(data).features.feature["steps/observation/image"]
                blobs.extend(bytes(b) for b in feature.bytes_list.value)
    decode_image_bytes(blobs[0], "warm-up")  # loads the codec: not part of the measured work
    started = time.perf_counter()
    with ThreadPoolExecutor(compute_threads(4)) as pool:
        for _ in pool.map(lambda b: decode_image_bytes(b, "bench"), blobs):
            pass
    seconds = time.perf_counter() - started
    print(json.dumps({"rows": len(blobs), "compute_s": seconds, "cores": cores}))


_TFDS_CHILD = """
import json, os, sys, time
cores = sorted(os.sched_getaffinity(0))[:2]
os.sched_setaffinity(0, cores)
import tensorflow as tf
import tensorflow_datasets as tfds
builder = tfds.builder_from_directory(sys.argv[1])
ds = builder.as_dataset(split="train", shuffle_files=False)
started = time.perf_counter()
rows = 0
for episode in tfds.as_numpy(ds):
    for step in episode["steps"]:
        rows += 1
print(json.dumps({"rows": rows, "compute_s": time.perf_counter() - started, "cores": len(cores)}))
"""


def run_tfds(python: str, root: Path) -> dict:
    started = time.perf_counter()
    proc = subprocess.run(
        [python, "-c", _TFDS_CHILD, str(root / "bench_robot" / "1.0.0")],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": ""},
    )
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["wall_s"] = time.perf_counter() - started
    return result


def measure(root: Path, workdir: str, tfds_python: str | None) -> dict:
    ours = run_child("bench.openx_rlds", ["_ours", str(root), workdir + "/ours"])
    limit = run_child("bench.openx_rlds", ["_limit", str(root)])
    frames = ours.result["rows"]
    assert limit.result["rows"] == frames
    ours_fps = frames / ours.result["compute_s"]
    limit_fps = frames / limit.result["compute_s"]
    report = {
        "frames": frames,
        "cores": ours.result["cores"],
        "ours_compute_s": round(ours.result["compute_s"], 2),
        "ours_fps": round(ours_fps),
        "ours_peak_anon_mb": round(ours.peak_anon_mb),
        "image_decode_limit_fps": round(limit_fps),
        "ratio_to_decode_limit": round(ours_fps / limit_fps, 2),
    }
    if tfds_python:
        theirs = run_tfds(tfds_python, root)
        assert theirs["rows"] == frames
        report["tfds_compute_s"] = round(theirs["compute_s"], 2)
        report["tfds_fps"] = round(frames / theirs["compute_s"])
        report["speedup_vs_tfds"] = round(theirs["compute_s"] / ours.result["compute_s"], 2)
    return report


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=40)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--tfds-python", default=None)
    args = parser.parse_args()
    report = {}
    for n in (args.episodes, args.episodes * 4):
        root = make_dataset(n, args.steps)
        with tempfile.TemporaryDirectory(dir=DATA) as tmp:
            report[f"{n}_episodes"] = measure(root, tmp, args.tfds_python)
    for size, figures in report.items():
        print(size)
        for key, value in figures.items():
            print(f"  {key:24s} {value}")
    save_report("openx_rlds", report)


if __name__ == "__main__":
    dispatch({"_ours": child_ours, "_limit": child_limit}, main)
