"""Benchmark: frames stored encoded against the decoded layout, same data, same run.

Data: fractal20220817_data (RT-1) written from the TFDS authors' real features.json, its
256x320 camera as JPEG (quality 90) of a synthetic scene (a lit gradient, moving shapes, sensor
noise: ~15-20 KB a frame, as fractal's published frames are), ``--episodes`` x ``--steps``.
Built twice through the real stages, ``EPISODE_WAREHOUSE_FRAMES=encoded`` and ``=decoded``.

1. Build: seconds of the decoded and TED stages of each layout (the encoded one writes the
   published bytes, not pixels), and the camera's bytes on disk against the published JPEGs.
2. Loading, DataLoader with 2 workers, alternating layouts for ``--rounds`` rounds of
   ``--seconds`` each (the best round of each kept): ``EpisodeStream`` slices of 8 steps in
   batches of 32, and ``VLADataset`` items in batches of 64, as it comes (the view at its
   stored size) and as Octo's pretraining asks (primary view resized to 256x256, chunk 4);
   frames/s, and anonymous RSS of the process tree at the start and the end. Also from a
   bucket (``gs://``, gcp-storage-emulator in its own process, threaded): the encoded
   warehouse built again into it, each stream's figure against the folder's (issue #72).
3. Against lerobot, same run: the encoded warehouse's episodes exported to LeRobot v3 with
   video (lerobot's own writer, AV1), read by lerobot's ``LeRobotDataset`` (torchcodec) in
   shuffled batches of 32 with 2 workers; ours: ``StepWindowDataset`` over the same steps (the
   camera at offset 0), shuffled batches of 32, 2 workers, frames decoded when sampled; and
   the same from the bucket (its TED fetched whole into the cache, then memory-mapped).

    python -m bench.frames [--episodes 160] [--steps 40] [--seconds 30] [--rounds 2]

Epochs: a stream's figure is over whole epochs, the turnover between them included (the
DataLoader drains its workers at each epoch's end and refills them at the next one's start);
each stream also reports that turnover and its rate within epochs. With 40 episodes (an epoch
of 0.4 s) the turnover took a third of the time (132 ms an epoch), so the default is 160.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import threading
import time
from pathlib import Path

import numpy as np

from bench.measure import dispatch, run_child, save_report, scaled

DATA = Path(__file__).parent / "data" / "frames"
SAMPLES = Path(__file__).resolve().parents[2] / "shared" / "samples" / "oxe_features"
NAME = "fractal20220817_data"
LAYOUTS = ("encoded", "decoded")
CAMERA = "observation/image"


def scene(t: int, length: int, seed: int = 0) -> np.ndarray:
    """A 256x320 RGB frame: a lit gradient, two shapes moving with ``t``, sensor noise."""
    rng = np.random.default_rng(seed * 100_003 + t)
    y, x = np.mgrid[0:256, 0:320].astype(np.float32)
    image = np.stack([60 + 0.3 * y, 80 + 0.25 * x, 100 + 0.1 * (x + y)], axis=-1)
    cx, cy = 60 + 200 * t / max(length - 1, 1), 128 + 60 * np.sin(t / 5 + seed)
    disc = (x - cx) ** 2 + (y - cy) ** 2 < 30**2
    image[disc] = (200, 40, 40)
    box = (abs(x - 320 + cx) < 25) & (abs(y - 80) < 18)
    image[box] = (30, 160, 60)
    image += rng.normal(0, 5, image.shape)
    return np.clip(image, 0, 255).astype(np.uint8)


def _write_source(episodes: int, steps: int) -> Path:
    from warehouse_fixtures.oxe_from_features import write_from_features

    src = DATA / f"src-{episodes}x{steps}"
    if not (src / NAME).exists():
        shutil.rmtree(DATA, ignore_errors=True)
        features = next((SAMPLES / NAME).rglob("features.json"))
        write_from_features(src, NAME, features, [steps] * episodes,
                            overrides={CAMERA: scene})  # fmt: skip
    return src


def child_build(layout: str, src: str) -> None:
    """Build the layout's warehouse (``EPISODE_WAREHOUSE_FRAMES`` is set by the parent)."""
    from episode_warehouse.paths import WarehouseLayout
    from episode_warehouse.sources.openx.raw import mirror_openx
    from episode_warehouse.sources.openx.stage import decode_openx
    from episode_warehouse.stages import build_ted_stage
    from episode_warehouse.standardized.stage import build_standardized_stage

    wh = WarehouseLayout.local(DATA / layout)
    mirror_openx(src, NAME, wh.raw_dir("openx", NAME), root=wh.root, code_version="bench")
    t = time.perf_counter()
    decode_openx(wh, NAME, code_version="bench")
    decode_s = time.perf_counter() - t
    t = time.perf_counter()
    build_ted_stage(wh, "openx", NAME, code_version="bench")
    ted_s = time.perf_counter() - t
    build_standardized_stage(wh, "openx", NAME, code_version="bench")
    ted = wh.ted_dir("openx", NAME)
    camera = sum(p.stat().st_size for p in ted.glob("observation/image.*"))
    print(json.dumps({"decode_s": round(decode_s, 2), "ted_s": round(ted_s, 3),
                      "camera_bytes": camera}))  # fmt: skip


def _published_bytes(src: Path) -> int:
    from episode_warehouse.tfrecord.example import parse_example
    from episode_warehouse.tfrecord.records import iter_records

    total = 0
    for shard in (src / NAME).rglob("*.tfrecord-*"):
        with open(shard, "rb") as fh:
            for _, data in iter_records(fh, str(shard)):
                feature = parse_example(data).features.feature[f"steps/{CAMERA}"]
                total += sum(len(b) for b in feature.bytes_list.value)
    return total


def _tree_anon_mb() -> float:
    from bench.measure import _descendants, _status

    pids = [os.getpid(), *_descendants(os.getpid())]
    return sum(_status(p).get("RssAnon", 0) for p in pids) / 1024


@contextlib.contextmanager
def _bucket_root():
    """The encoded warehouse built again, from the same source through the same stages,
    into ``gs://bench/frames`` on gcp-storage-emulator (its own process, serving each
    connection on a thread, as GCS serves concurrent requests); yields the root's URL."""
    import tempfile

    from episode_warehouse.gcs import gcs_client
    from episode_warehouse.paths import WarehouseLayout
    from episode_warehouse.sources.openx.raw import mirror_openx
    from episode_warehouse.sources.openx.stage import decode_openx
    from episode_warehouse.stages import build_ted_stage
    from episode_warehouse.standardized.stage import build_standardized_stage
    from warehouse_fixtures.gcs_emulator import emulator_process

    src = str(next(DATA.glob("src-*")))
    work = Path(tempfile.mkdtemp(prefix="bench-frames-bucket-"))
    try:
        with emulator_process(threaded=True) as endpoint:
            os.environ.update(STORAGE_EMULATOR_HOST=endpoint, EPISODE_WAREHOUSE_FRAMES="encoded",
                              EPISODE_WAREHOUSE_LOCAL_COPY=str(work / "scratch"),
                              EPISODE_WAREHOUSE_CACHE=str(work / "cache"))  # fmt: skip
            gcs_client(endpoint).create_bucket("bench")
            url = "gs://bench/frames"
            wh = WarehouseLayout.from_root(url)
            mirror_openx(src, NAME, wh.raw_dir("openx", NAME), root=wh.root, code_version="bench")
            decode_openx(wh, NAME, code_version="bench")
            build_ted_stage(wh, "openx", NAME, code_version="bench")
            build_standardized_stage(wh, "openx", NAME, code_version="bench")
            shutil.rmtree(work / "scratch")  # a training node: nothing of the build on disk
            yield url
    finally:
        shutil.rmtree(work, ignore_errors=True)


def child_stream(kind: str, layout: str, seconds: str) -> None:
    """Stream for ``seconds``; prints frames/s and RSS (one JSON line). ``layout`` "bucket":
    the encoded warehouse from a bucket (:func:`_bucket_root`)."""
    if layout == "bucket":
        with _bucket_root() as url:
            _stream(kind, url, seconds)
        return
    _stream(kind, DATA / layout, seconds)


def _stream(kind: str, root, seconds: str) -> None:
    import pyarrow.parquet as pq
    from torch.utils.data import DataLoader

    from episode_warehouse.loading import EpisodeStream, Selection, ted_collate
    from episode_warehouse.standardized import VLADataset

    if kind == "lerobot":
        from lerobot.datasets.lerobot_dataset import LeRobotDataset

        dataset = LeRobotDataset(EXPORT_REPO, root=DATA / "lerobot")
        _time_random(dataset, None, seconds)
        return
    # the episodes' rows: the same in every layout (same source, same stages)
    episodes = DATA / "encoded" / "ted" / "openx" / NAME / "episodes.parquet"
    if kind == "random":
        from episode_warehouse.loading import StepWindowDataset

        table = pq.read_table(episodes).to_pylist()
        rows = [("openx", NAME, e["episode"], e["start"], e["length"]) for e in table]
        windows = StepWindowDataset(
            Selection.from_rows(rows, root), {tuple(CAMERA.split("/")): [0]}
        )
        _time_random(windows, ted_collate, seconds)
        return
    if kind == "episodes":  # the stream as it comes: no option
        table = pq.read_table(episodes).to_pylist()
        rows = [("openx", NAME, e["episode"], e["start"], e["length"]) for e in table]
        dataset = EpisodeStream(Selection.from_rows(rows, root), 8, drop_last=True)
        batch_size, per_item = 32, 8
    elif kind == "vla":  # as it comes: views at their stored size (only the epoch's length given)
        dataset = VLADataset([(NAME, 1.0)], root, num_samples=10**9)
        batch_size, per_item = 64, 1
    else:  # "vla-octo": Octo's pretraining images, the primary view resized to 256x256, chunk 4
        dataset = VLADataset([(NAME, 1.0)], root, image_sizes={"primary": (256, 256)}, chunk=4,
                             num_samples=10**9, views=("primary",))  # fmt: skip
        batch_size, per_item = 64, 1
    loader = DataLoader(dataset, batch_size=batch_size, num_workers=2, collate_fn=ted_collate,
                        persistent_workers=True, prefetch_factor=4)  # fmt: skip
    rss: list[tuple[float, float]] = []  # (seconds since the first batch, anonymous RSS)
    stop = threading.Event()

    def watch():
        while not stop.is_set():
            rss.append((time.perf_counter() - (started or 0.0), _tree_anon_mb()))
            stop.wait(2)

    frames, started, epoch = 0, None, 0
    watcher = threading.Thread(target=watch, daemon=True)
    gaps: list[float] = []  # an epoch's end to the next epoch's first batch (the pipeline refills)
    ended = None
    while True:
        if hasattr(dataset, "set_epoch"):
            dataset.set_epoch(epoch)
        for batch in loader:
            if started is None:  # the first batch starts the clock (workers are up)
                started = time.perf_counter()
                watcher.start()
                continue
            if ended is not None:
                gaps.append(time.perf_counter() - ended)
                ended = None
            frames += batch.batch_size[0] * per_item
            if time.perf_counter() - started > float(seconds):
                break
        else:
            epoch += 1
            ended = time.perf_counter()
            continue
        break
    elapsed = time.perf_counter() - started
    between = sum(gaps)
    stop.set()
    window = min(60.0, elapsed / 4)  # the first and the last minute (a quarter of short runs)
    seen = [m for _, m in rss] or [0.0]  # a tiny run may end between two samples
    first = max((m for t, m in rss if t <= window), default=seen[0])
    last = max((m for t, m in rss if t >= elapsed - window), default=seen[-1])
    print(json.dumps({"frames_per_s": round(frames / elapsed, 1), "seconds": round(elapsed, 1),
                      "epochs": epoch,
                      "epoch_turnover_ms": round(1000 * between / max(len(gaps), 1)),
                      "frames_per_s_within_epochs": round(frames / (elapsed - between), 1),
                      "anon_rss_first_window_mb": round(first, 1),
                      "anon_rss_last_window_mb": round(last, 1), "rss_window_s": round(window),
                      "anon_rss_peak_mb": round(max(seen), 1)}))  # fmt: skip


def child_bound(processes: str, seconds: str, decoder: str) -> None:
    """The decode bound (``bench.measure.decode_bound``, ``decoder``) on the encoded TED's
    stored frames: frames/s of ``processes`` processes together (one JSON line)."""
    from bench.measure import decode_bound

    ted = DATA / "encoded" / "ted" / "openx" / NAME
    offsets = np.load(ted / "observation" / "image.offsets.npy")
    data = np.fromfile(ted / "observation" / "image.frames", dtype=np.uint8)
    rate = decode_bound([(offsets, data)], int(processes), float(seconds), decoder)
    print(json.dumps({"frames_per_s": round(rate, 1), "processes": int(processes)}))


EXPORT_REPO = "episode-warehouse/bench_frames"


def _time_random(dataset, collate, seconds: str) -> None:
    """Shuffled batches of 32 with 2 workers for ``seconds``: samples/s (one JSON line)."""
    from torch.utils.data import DataLoader

    loader = DataLoader(dataset, batch_size=32, shuffle=True, num_workers=2, collate_fn=collate,
                        persistent_workers=True, prefetch_factor=4)  # fmt: skip
    samples, started = 0, None
    while True:
        for _ in loader:
            if started is None:
                started = time.perf_counter()
                continue
            samples += 32
            if time.perf_counter() - started > float(seconds):
                break
        else:
            continue
        break
    elapsed = time.perf_counter() - started
    print(json.dumps({"samples_per_s": round(samples / elapsed, 1), "seconds": round(elapsed, 1)}))


def child_export() -> None:
    """The encoded warehouse's episodes as a LeRobot v3 dataset with video (lerobot's writer)."""
    import pyarrow.parquet as pq

    from episode_warehouse.export.lerobot import ExportRequest, export_lerobot

    root = DATA / "encoded"
    table = pq.read_table(root / "ted" / "openx" / NAME / "episodes.parquet").to_pylist()
    rows = [("openx", NAME, e["episode"], e["start"], e["length"]) for e in table]
    t = time.perf_counter()
    request = ExportRequest("bench_frames", str(root), rows, video=True)
    export_lerobot(request, DATA / "lerobot", workers=2)
    video = sum(p.stat().st_size for p in (DATA / "lerobot").rglob("*.mp4"))
    print(json.dumps({"export_s": round(time.perf_counter() - t, 1), "mp4_bytes": video}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=scaled(160, 4))
    parser.add_argument("--steps", type=int, default=scaled(40, 10))
    parser.add_argument("--seconds", type=int, default=scaled(30, 2))
    parser.add_argument("--rounds", type=int, default=scaled(2, 1))
    args = parser.parse_args()
    src = _write_source(args.episodes, args.steps)
    published = _published_bytes(src)
    report: dict = {
        "episodes_x_steps": [args.episodes, args.steps],
        "published_jpeg_bytes": published,
        "jpeg_bytes_per_frame": round(published / (args.episodes * args.steps)),
    }
    for layout in LAYOUTS:
        shutil.rmtree(DATA / layout, ignore_errors=True)
        os.environ["EPISODE_WAREHOUSE_FRAMES"] = layout
        report[f"build_{layout}"] = run_child("bench.frames", ["build", layout, str(src)]).result
    enc, dec = report["build_encoded"], report["build_decoded"]
    report["disk_camera_vs_published"] = {
        k: round(report[f"build_{k}"]["camera_bytes"] / published, 3) for k in LAYOUTS
    }
    report["build_decode_stage_encoded_vs_decoded_time"] = round(
        enc["decode_s"] / dec["decode_s"], 2
    )
    report["build_ted_stage_encoded_vs_decoded_time"] = round(enc["ted_s"] / dec["ted_s"], 2)
    bounds = {"torchvision": 0.0, "simplejpeg": 0.0}
    for _ in range(args.rounds):  # the baseline: 2 processes (= the loaders' workers) decoding
        for decoder in bounds:
            bound_args = ["bound", "2", str(args.seconds), decoder]
            got = run_child("bench.frames", bound_args).result
            bounds[decoder] = max(bounds[decoder], got["frames_per_s"])
    bound = bounds["torchvision"]  # issue #58's definition: torchvision's decode_jpeg
    report["decode_bound_2_processes_frames_per_s"] = bound
    report["decode_bound_into_buffer_2_processes_frames_per_s"] = bounds["simplejpeg"]
    for kind in ("episodes", "vla", "vla-octo"):
        best: dict[str, dict] = {}
        for _ in range(args.rounds):
            for layout in (*LAYOUTS, "bucket"):
                got = run_child("bench.frames", ["stream", kind, layout, str(args.seconds)]).result
                if layout not in best or got["frames_per_s"] > best[layout]["frames_per_s"]:
                    best[layout] = got
        name = kind.replace("-", "_")
        report[f"{name}_stream"] = best
        report[f"{name}_encoded_vs_decode_bound"] = round(
            best["encoded"]["frames_per_s"] / bound, 2
        )
        report[f"{name}_encoded_vs_decode_bound_into_buffer"] = round(
            best["encoded"]["frames_per_s"] / bounds["simplejpeg"], 2
        )
        report[f"{name}_bucket_vs_folder"] = round(
            best["bucket"]["frames_per_s"] / best["encoded"]["frames_per_s"], 2
        )
        if "decoded" in best:
            report[f"{name}_encoded_vs_decoded_frames_per_s"] = round(
                best["encoded"]["frames_per_s"] / best["decoded"]["frames_per_s"], 2
            )
    shutil.rmtree(DATA / "lerobot", ignore_errors=True)
    report["lerobot_export"] = run_child("bench.frames", ["export"]).result
    best = {}
    for _ in range(args.rounds):
        for kind, layout in (("random", "encoded"), ("random", "bucket"), ("lerobot", "encoded")):
            got = run_child("bench.frames", ["stream", kind, layout, str(args.seconds)]).result
            name = kind if layout == "encoded" else f"{kind}_{layout}"
            if name not in best or got["samples_per_s"] > best[name]["samples_per_s"]:
                best[name] = got
    report["random_samples_ours_encoded"] = best["random"]
    report["random_samples_ours_bucket"] = best["random_bucket"]
    report["random_samples_bucket_vs_folder"] = round(
        best["random_bucket"]["samples_per_s"] / best["random"]["samples_per_s"], 2
    )
    report["random_samples_lerobot_video"] = best["lerobot"]
    report["random_samples_ours_vs_lerobot"] = round(
        best["random"]["samples_per_s"] / best["lerobot"]["samples_per_s"], 2
    )
    report["random_samples_ours_vs_decode_bound"] = round(
        best["random"]["samples_per_s"] / bound, 2
    )
    save_report("frames", report)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    dispatch({"build": child_build, "stream": child_stream, "export": child_export,
              "bound": child_bound}, main)  # fmt: skip
    sys.exit(0)
