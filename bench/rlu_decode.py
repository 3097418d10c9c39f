"""Benchmark: RL Unplugged Atari files -> ready TED, against the PNG decode limit and a naive
reader, in the same run.

- **decode limit**: the fastest PNG decoder here (OpenCV or torchvision, one core, measured on
  the same frames) times the cores: no pipeline that decodes every frame can beat it;
- **naive reader**: what a user without the warehouse would write: one record at a time, PIL to
  decode, Python lists, ``np.stack`` at the end (TFDS would need TensorFlow);
- **ours**: ``decode_rlu_run`` + ``build_ted`` in a child process (timed after imports), with
  the peak heap (RssAnon summed over the workers) for two file sizes.

    python -m bench.rlu_decode                      # 2 files x 50,000 steps, then 2 x 250,000
    python -m bench.rlu_decode --steps 10000 --files 4
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.measure import dispatch, run_child, save_report, scaled

DATA = Path(__file__).parent / "data"


def make_files(files: int, steps: int) -> Path:
    """``<folder>/Pong/run_1-0000i-of-0000n``, ``steps`` rows (transitions) each (written once;
    the folder name carries the writer's format, so an older cache is not reused)."""
    from warehouse_fixtures.rlu_writer import file_name, write_simulated_file

    folder = DATA / f"rlu-v2-{files}x{steps}"
    if (folder / "done").exists():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    rng = np.random.default_rng(0)
    index = 0
    for i in range(files):
        path = folder / "Pong" / file_name(1, i, files)
        index = write_simulated_file(path, steps, rng, i, index, lambda e: e % 4 != 3)
    (folder / "done").write_text("")
    return folder


def sample_pngs(folder: Path, count: int = 20000) -> list[bytes]:
    from episode_warehouse.sources.atari.rlu_episode import parse_record
    from episode_warehouse.tfrecord.records import iter_gzip_records

    out: list[bytes] = []
    path = sorted((folder / "Pong").iterdir())[0]
    with open(path, "rb") as fh:
        for _, data in iter_gzip_records(fh, path.name):
            out.extend(parse_record(data, path.name).pngs)
            if len(out) >= count:
                break
    return out[:count]


def write_rate(pngs: list[bytes], folder: Path) -> float:
    """Frames/s of decoding with OpenCV and writing the frames to a fresh file, one core: what
    any pipeline pays at least per frame here (writing fresh page-cache pages is not free)."""
    import cv2

    frames = np.empty((len(pngs), 84, 84), dtype=np.uint8)
    with tempfile.NamedTemporaryFile(dir=folder) as out:
        t = time.perf_counter()
        for i, p in enumerate(pngs):
            frames[i] = cv2.imdecode(np.frombuffer(p, dtype=np.uint8), cv2.IMREAD_UNCHANGED)
        out.write(frames.tobytes())
        out.flush()
        return len(pngs) / (time.perf_counter() - t)


def decoder_rates(pngs: list[bytes]) -> dict[str, float]:
    """Frames/s of each PNG decoder on one core (best of 3)."""
    import cv2
    import torch
    from torchvision.io import decode_png

    cv2.setNumThreads(1)
    torch.set_num_threads(1)
    buffers = [np.frombuffer(p, dtype=np.uint8) for p in pngs]
    tensors = [torch.frombuffer(bytearray(p), dtype=torch.uint8) for p in pngs]
    rates = {}
    for name, run in (
        ("opencv", lambda: [cv2.imdecode(b, cv2.IMREAD_UNCHANGED) for b in buffers]),
        ("torchvision", lambda: [decode_png(t) for t in tensors]),
    ):
        best = 0.0
        for _ in range(3):
            t = time.perf_counter()
            run()
            best = max(best, len(pngs) / (time.perf_counter() - t))
        rates[name] = best
    return rates


def child_ours(folder: str, out: str, workers: str) -> None:
    from episode_warehouse.decoded import open_decoded
    from episode_warehouse.sources.atari.rlu_decode import decode_rlu_run
    from episode_warehouse.sources.source_file import SourceFile
    from episode_warehouse.ted import build_ted

    sources = [SourceFile(p.name, path=str(p)) for p in sorted((Path(folder) / "Pong").iterdir())]
    dec, ted = Path(out) / "dec", Path(out) / "ted"
    dec.mkdir()
    ted.mkdir()
    t = time.perf_counter()
    meta = decode_rlu_run(sources, dec, workers=int(workers))
    build_ted(open_decoded(dec), ted)
    seconds = time.perf_counter() - t
    print(json.dumps({"seconds": seconds, "frames": meta.rows, "rows": meta.rows}))


def child_naive(folder: str, out: str) -> None:
    """One record at a time, PIL, Python lists; the whole run stacked and saved at the end."""
    from PIL import Image

    from episode_warehouse.tfrecord.example import parse_example

    t = time.perf_counter()
    observations, actions, rewards = [], [], []
    for path in sorted((Path(folder) / "Pong").iterdir()):
        with gzip.open(path) as fh:
            raw = fh.read()
        pos = 0
        while pos < len(raw):
            length = int.from_bytes(raw[pos : pos + 8], "little")
            record = raw[pos + 12 : pos + 12 + length]
            pos += 16 + length
            f = parse_example(record).features.feature
            frames = [
                np.asarray(Image.open(io.BytesIO(b))) for b in f["observations"].bytes_list.value
            ]
            observations.extend(frames)  # every logged row is a transition
            actions.extend(f["actions"].int64_list.value)
            rewards.extend(f["clipped_rewards"].float_list.value)
    np.save(Path(out) / "observation.npy", np.stack(observations))
    np.save(Path(out) / "action.npy", np.array(actions, dtype=np.int32))
    np.save(Path(out) / "reward.npy", np.array(rewards, dtype=np.float32))
    frames = len(observations)
    print(json.dumps({"seconds": time.perf_counter() - t, "frames": frames}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=2)
    parser.add_argument(
        "--steps", type=int, default=scaled(50_000, 2000), help="transitions per file"
    )
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    report: dict = {"files": args.files, "cores": args.workers}
    folder = make_files(args.files, args.steps)
    sample = sample_pngs(folder)

    def limit() -> tuple[float, dict]:
        rates = decoder_rates(sample)
        rates["opencv_and_fresh_write"] = write_rate(sample, DATA)
        return max(rates["opencv"], rates["torchvision"]) * args.workers, rates

    for steps in (args.steps, args.steps * 5):
        data = make_files(args.files, steps)
        before, rates = limit()  # this VM's speed drifts: measure the limit around each run
        with tempfile.TemporaryDirectory(dir=DATA) as tmp:
            ours = run_child("bench.rlu_decode", ["_ours", str(data), tmp, str(args.workers)])
        after, _ = limit()
        fps = ours.result["frames"] / ours.result["seconds"]
        report[f"{steps}_steps_per_file"] = {
            "frames": ours.result["frames"],
            "decoder_fps_one_core": {k: round(v) for k, v in rates.items()},
            "decode_limit_fps": round((before + after) / 2),
            "ours_s": round(ours.result["seconds"], 2),
            "ours_fps": round(fps),
            "ours_vs_decode_limit": round(fps / ((before + after) / 2), 2),
            "ours_vs_decode_and_write_limit": round(
                fps / (rates["opencv_and_fresh_write"] * args.workers), 2
            ),
            "ours_peak_heap_mb": round(ours.peak_anon_mb),
            "file_mb": round(sum(p.stat().st_size for p in (data / "Pong").iterdir()) / 1e6),
        }
    with tempfile.TemporaryDirectory(dir=DATA) as tmp:
        naive = run_child("bench.rlu_decode", ["_naive", str(folder), tmp])
    naive_fps = naive.result["frames"] / naive.result["seconds"]
    first = report[f"{args.steps}_steps_per_file"]
    report["naive_fps"] = round(naive_fps)
    report["naive_peak_heap_mb"] = round(naive.peak_anon_mb)
    report["ours_vs_naive"] = round(first["ours_fps"] / naive_fps, 2)
    print(json.dumps(report, indent=1))
    save_report("rlu_decode", report)


if __name__ == "__main__":
    dispatch({"_ours": child_ours, "_naive": child_naive}, main)
