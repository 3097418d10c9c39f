"""Octo's own data pipeline over the benchmark's RLDS folders: the baseline of
``bench.vla_mixture``'s ``octo`` part.

This file runs in the side environment that ``bench.vla_mixture`` builds (tensorflow-cpu,
tensorflow-datasets; Octo's and dlimp's sources on ``PYTHONPATH``), never in the project's:
it imports neither the project nor torch. It builds Octo's ``make_interleaved_dataset`` the
way Octo's training configs do, with the settings of our ``VLADataset`` run (views resized to
256x256 and 128x128, window 1, a chunk of 4 actions, proprio and language loaded and padded to
the mix's widths, batches of 64, no augmentation) and tf.data's AUTOTUNE for every thread
count (Octo's best case on a small machine), then iterates it for a number of seconds.

    python bench/octo_side.py '{"data_dir": ..., "datasets": [...], "seconds": 60, ...}'

Prints one JSON line: items/s (an item is one timestep, as in our count), the first batch's
wait, the shapes of the first batch, and this process's anonymous RSS sampled every 5 s.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path


def _rss_mb() -> tuple[float, float]:
    anon = files = 0
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            anon = int(line.split()[1])
        elif line.startswith("RssFile:"):
            files = int(line.split()[1])
    return anon / 1024, files / 1024


def _builder_from_folders(tfds) -> None:
    """Octo asks ``tfds.builder(name, data_dir=...)``, which looks ``name`` up in TFDS's
    registry first; the folders hold datasets TFDS has no builder for, so each is opened from
    its newest version folder (``<data_dir>/<name>/<version>``), as the reference says."""

    def builder(name: str, data_dir: str | None = None, **_kwargs):
        if data_dir is None:
            raise ValueError(f"{name}: no data_dir")
        versions = sorted(p for p in (Path(data_dir) / name).iterdir() if p.is_dir())
        if not versions:
            raise FileNotFoundError(f"{Path(data_dir) / name}: no version folder")
        return tfds.builder_from_directory(str(versions[-1]))

    tfds.builder = builder


def run(args: dict) -> dict:
    import tensorflow as tf
    import tensorflow_datasets as tfds

    tf.config.set_visible_devices([], "GPU")
    _builder_from_folders(tfds)
    from octo.data.dataset import make_interleaved_dataset
    from octo.data.oxe import make_oxe_dataset_kwargs_and_weights

    kwargs_list, weights = make_oxe_dataset_kwargs_and_weights(
        [(name, 1.0) for name in args["datasets"]],
        args["data_dir"],
        load_camera_views=("primary", "wrist"),
        load_proprio=True,
        load_language=True,
    )
    dataset = make_interleaved_dataset(
        kwargs_list,
        weights,
        train=True,
        shuffle_buffer_size=args["shuffle"],
        batch_size=args["batch"],
        traj_transform_kwargs={
            "window_size": 1,
            "action_horizon": args["chunk"],
            # widths differ across the mix: without these every batch fails and the
            # pipeline's ignore_errors drops it silently (the reference's pitfall)
            "max_action_dim": args["action_dim"],
            "max_proprio_dim": args["state_dim"],
        },
        frame_transform_kwargs={"resize_size": {k: tuple(v) for k, v in args["sizes"].items()}},
        traj_transform_threads=None,
        traj_read_threads=None,
    )
    samples: list[tuple[float, float, float]] = []
    stop = threading.Event()
    started = time.perf_counter()

    def sample() -> None:
        while not stop.is_set():
            samples.append((time.perf_counter() - started, *_rss_mb()))
            stop.wait(5)

    watcher = threading.Thread(target=sample, daemon=True)
    watcher.start()
    items, first_batch, shapes = 0, None, {}
    for batch in dataset.iterator():
        if first_batch is None:
            first_batch = time.perf_counter() - started
            shapes = {
                "image_primary": list(batch["observation"]["image_primary"].shape),
                "image_wrist": list(batch["observation"]["image_wrist"].shape),
                "proprio": list(batch["observation"]["proprio"].shape),
                "action": list(batch["action"].shape),
            }
        items += len(batch["action"])
        if time.perf_counter() - started > args["seconds"]:
            break
    elapsed = time.perf_counter() - started
    stop.set()
    if first_batch is None:
        raise SystemExit("Octo's pipeline gave no batch (its ignore_errors drops failed ones)")
    steady = elapsed - first_batch
    head = [a for t, a, _ in samples if t <= 60]
    tail = [a for t, a, _ in samples if t >= elapsed - 60]
    return {
        "frames": items, "seconds": round(elapsed, 1),
        "frames_per_s": round(items / elapsed, 1),
        "frames_per_s_after_first_batch": round((items - args["batch"]) / steady, 1),
        "first_batch_s": round(first_batch, 2), "first_batch_shapes": shapes,
        "anon_rss_first_minute_mb": round(max(head), 1),
        "anon_rss_last_minute_mb": round(max(tail), 1),
        "anon_rss_peak_mb": round(max(a for _, a, _ in samples), 1),
        "file_rss_peak_mb": round(max(f for _, _, f in samples), 1),
        "tensorflow": tf.__version__, "tensorflow_datasets": tfds.__version__,
    }  # fmt: skip


if __name__ == "__main__":
    print(json.dumps(run(json.loads(sys.argv[1]))), flush=True)
