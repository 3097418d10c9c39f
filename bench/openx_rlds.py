"""Benchmark: RLDS shards -> decoded episodes on 2 cores, against the image decode limit and
against ``tfds.load`` to numpy, on the same files.

Baselines, each measured in this run on the same 2 cores (``sched_setaffinity``):
- the image decode limit: every JPEG of the dataset, extracted beforehand, decoded with the
  same decoder (torchvision) on the same thread pool; the decoder cannot go faster than this.
- the decode-and-write bound: what the stage must do with every frame whatever its code is to
  decode it and write it out (C, H, W) to a file (the page cache). The write alone is timed
  (frames decoded untimed, one episode at a time); the bound is the time both would take
  spread perfectly over the 2 cores, ``decode_s + write_s / 2``: no decoder that writes its
  frames can beat it.
- ``tfds.load`` (``builder_from_directory(...).as_dataset``, iterated with ``tfds.as_numpy``,
  images decoded): only with ``--tfds-python``, an interpreter where tensorflow-datasets is
  installed (it is not one of the project's dependencies).
Peak heap (RssAnon) is reported for two dataset sizes: it must not grow with the dataset.
Incremental: the larger dataset decoded again after one of its shards changed (a new
generation), against its full decode in the same child.
Every measurement that writes starts with ``os.sync()`` (untimed): the page cache holds gigabytes
of the previous child's dirty pages otherwise, and the kernel throttles a writer to the disk's
speed once they pass ``vm.dirty_ratio``, which would charge one child for another's writes.

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

from bench.measure import dispatch, run_child, save_report, scaled

DATA = Path(__file__).parent / "data"
HEIGHT, WIDTH = 256, 320  # fractal20220817_data's camera; bridge's is 480x640
PER_SHARD = scaled(10, 2)  # episodes a shard (the incremental part changes the 4th shard)


def _pin_two_cores() -> int:
    cores = sorted(os.sched_getaffinity(0))[:2]
    os.sched_setaffinity(0, cores)
    return len(cores)


def make_dataset(episodes: int, steps: int) -> Path:
    from warehouse_fixtures import rlds_writer as w

    root = DATA / f"rlds-{episodes}-{steps}-{PER_SHARD}"
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
    import pandas  # noqa: F401 - imports are not part of the measured work (pyarrow's
    import pyarrow.parquet  # noqa: F401 - parquet writer imports pandas: ~0.5 s on 2 cores)
    import torchvision  # noqa: F401

    import episode_warehouse.sources.openx.rlds.decode  # noqa: F401
    from episode_warehouse.paths import WarehouseLayout
    from episode_warehouse.sources.openx.raw import mirror_openx
    from episode_warehouse.sources.openx.stage import decode_openx

    cores = _pin_two_cores()
    layout = WarehouseLayout.local(Path(out))
    mirror_openx(
        root,
        "bench_robot",
        layout.raw_dir("openx", "bench_robot"),
        root=layout.root,
        code_version="b",
    )
    os.sync()
    started = time.perf_counter()
    built = decode_openx(layout, "bench_robot", code_version="b")
    seconds = time.perf_counter() - started
    print(json.dumps({"rows": built.meta.rows, "compute_s": seconds, "cores": cores}))


def _episode_images(root: str) -> list[list[bytes]]:
    from episode_warehouse.tfrecord.example import parse_example
    from episode_warehouse.tfrecord.records import iter_records

    episodes = []
    for shard in sorted(Path(root, "bench_robot", "1.0.0").glob("*.tfrecord-*")):
        with open(shard, "rb") as fh:
            for _, data in iter_records(fh, shard.name):
                feature = parse_example(data).features.feature["steps/observation/image"]
                episodes.append([bytes(b) for b in feature.bytes_list.value])
    return episodes


def _file_system(path: str) -> str:
    """The type of the file system ``path`` is on (from /proc/self/mounts)."""
    best, kind = "", "unknown"
    real = os.path.realpath(path)
    with open("/proc/self/mounts") as fh:
        for line in fh:
            mount, fstype = line.split()[1:3]
            inside = real == mount or real.startswith(mount.rstrip("/") + "/")
            if inside and len(mount) > len(best):
                best, kind = mount, fstype
    return kind


def child_incremental(root: str, out: str) -> None:
    """Decode; copy the dataset with one shard rewritten (new bytes' generation); decode again."""
    import pandas  # noqa: F401 - imports are not part of the measured work
    import torchvision  # noqa: F401

    from episode_warehouse.paths import WarehouseLayout
    from episode_warehouse.sources.openx.raw import mirror_openx
    from episode_warehouse.sources.openx.stage import decode_openx

    cores = _pin_two_cores()
    source = Path(out) / "source"
    shutil.copytree(root, source)
    layout = WarehouseLayout.local(Path(out) / "wh")

    def decode() -> tuple[float, dict]:
        mirror_openx(
            str(source),
            "bench_robot",
            layout.raw_dir("openx", "bench_robot"),
            root=layout.root,
            code_version="b",
        )
        os.sync()
        started = time.perf_counter()
        built = decode_openx(layout, "bench_robot", code_version="b")
        return time.perf_counter() - started, built.meta

    full_s, _ = decode()
    shard = sorted((source / "bench_robot" / "1.0.0").glob("*.tfrecord-*"))[3]
    data = shard.read_bytes()
    shard.unlink()
    shard.write_bytes(data)  # the same bytes as a new file: a new generation, decoded again
    again_s, meta = decode()
    print(
        json.dumps(
            {
                "rows": meta.rows,
                "shards": len(meta.extra["shards"]),
                "copied": meta.extra["reused_shards"],
                "full_s": full_s,
                "compute_s": again_s,
                "cores": cores,
            }
        )
    )


def child_limit(root: str) -> None:
    """Decode every image on the pool, results dropped."""
    from concurrent.futures import ThreadPoolExecutor

    from episode_warehouse.limits import InputLimits
    from episode_warehouse.sources.openx.images import decode_image_bytes
    from episode_warehouse.threads import compute_threads

    cores = _pin_two_cores()
    blobs = sum(_episode_images(root), [])
    limits = InputLimits()
    decode_image_bytes(blobs[0], "warm-up", limits)  # loads the codec: not measured
    started = time.perf_counter()
    with ThreadPoolExecutor(compute_threads(4)) as pool:
        for _ in pool.map(lambda b: decode_image_bytes(b, "bench", limits), blobs):
            pass
    seconds = time.perf_counter() - started
    print(json.dumps({"rows": len(blobs), "compute_s": seconds, "cores": cores}))


def child_write(root: str, folder: str) -> None:
    """Write every episode's frames, (T, C, H, W) C-ordered, to a file; only the writes timed."""
    from episode_warehouse.limits import InputLimits
    from episode_warehouse.sources.openx.images import decode_image_bytes

    cores = _pin_two_cores()
    os.sync()
    seconds, rows = 0.0, 0
    with open(Path(folder) / "frames.bin", "wb") as fh:
        for blobs in _episode_images(root):
            out = np.ascontiguousarray(np.stack([decode_image_bytes(b, "bench", InputLimits())
                                                 for b in blobs]))  # fmt: skip
            started = time.perf_counter()
            fh.write(out.data)
            seconds += time.perf_counter() - started
            rows += len(blobs)
    print(json.dumps({"rows": rows, "compute_s": seconds, "cores": cores}))


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
    os.makedirs(workdir + "/written")
    written = run_child("bench.openx_rlds", ["_write", str(root), workdir + "/written"])
    frames = ours.result["rows"]
    assert limit.result["rows"] == frames == written.result["rows"]
    ours_fps = frames / ours.result["compute_s"]
    limit_fps = frames / limit.result["compute_s"]
    bound_s = limit.result["compute_s"] + written.result["compute_s"] / 2
    report = {
        "frames": frames,
        "cores": ours.result["cores"],
        "ours_compute_s": round(ours.result["compute_s"], 2),
        "ours_fps": round(ours_fps),
        "ours_peak_anon_mb": round(ours.peak_anon_mb),
        "image_decode_limit_fps": round(limit_fps),
        "ratio_to_decode_limit": round(ours_fps / limit_fps, 2),
        "write_only_s": round(written.result["compute_s"], 2),
        "decode_and_write_bound_fps": round(frames / bound_s),
        "ratio_to_decode_and_write_bound": round(ours_fps * bound_s / frames, 2),
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
    parser.add_argument("--episodes", type=int, default=scaled(40, 4))
    parser.add_argument("--steps", type=int, default=scaled(60, 10))
    parser.add_argument("--tfds-python", default=None)
    parser.add_argument(
        "--incremental-dir",
        default=str(DATA),
        help="where the incremental rebuild runs: its file system decides whether unchanged "
        "shards are shared (XFS, btrfs: reflinks) or copied (ext4)",
    )
    args = parser.parse_args()
    report = {}
    for n in (args.episodes, args.episodes * 4):
        root = make_dataset(n, args.steps)
        with tempfile.TemporaryDirectory(dir=DATA) as tmp:
            report[f"{n}_episodes"] = measure(root, tmp, args.tfds_python)
    with tempfile.TemporaryDirectory(dir=args.incremental_dir) as tmp:
        inc = run_child("bench.openx_rlds", ["_incremental", str(root), tmp]).result
    report["one_changed_shard"] = {
        "file_system": _file_system(args.incremental_dir),
        "shards": inc["shards"],
        "shards_copied": inc["copied"],
        "full_decode_s": round(inc["full_s"], 2),
        "rebuild_s": round(inc["compute_s"], 2),
        "ratio_to_full_decode": round(inc["compute_s"] / inc["full_s"], 2),
    }
    for size, figures in report.items():
        print(size)
        for key, value in figures.items():
            print(f"  {key:24s} {value}")
    save_report("openx_rlds", report)


if __name__ == "__main__":
    children = {"_ours": child_ours, "_limit": child_limit, "_write": child_write}
    dispatch({**children, "_incremental": child_incremental}, main)
