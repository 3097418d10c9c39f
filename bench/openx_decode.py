"""Benchmark: local OpenX shards -> TED, ours against TorchRL's per-step path, same shards.

Baseline (TorchRL's OpenX download path, one pass): for each episode, every step through
``_make_tensordict_image_conv`` (PIL decode + make_tensordict), ``torch.stack``,
``_format_data``, then written into a preallocated memmap TensorDict. Both pipelines read the
shards with the same webdataset reader; the baseline unpickles with plain pickle (these are
our own fixtures), ours with the restricted unpickler. Peak heap (RssAnon) is reported for two
dataset sizes to show that streaming memory does not grow with the dataset.

    python -m bench.openx_decode [--episodes 120] [--image-size 128]
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

from bench.measure import dispatch, run_child, save_report, scaled

DATA = Path(__file__).parent / "data"


def make_dataset(episodes: int, image_size: int) -> Path:
    from warehouse_fixtures.openx_writer import DatasetSpec, write_dataset

    root = DATA / f"openx-{episodes}-{image_size}"
    if (root / "done").exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    per_shard = 240  # the mirror's shards hold hundreds of episodes (~750 MB each)
    lengths = [
        [60 + (i * 7) % 50 for i in range(s, min(s + per_shard, episodes))]
        for s in range(0, episodes, per_shard)
    ]
    write_dataset(root, DatasetSpec("cmu_stretch", image_size=image_size), lengths)
    (root / "done").write_text("")
    return root


def child_ours(root: str, out: str) -> None:
    import datasets  # noqa: F401 - imports are not part of the measured work
    import pandas  # noqa: F401
    import torchvision  # noqa: F401

    from episode_warehouse.decoded import open_decoded
    from episode_warehouse.sources.openx.decode import decode_shards
    from episode_warehouse.sources.openx.shards import list_shards
    from episode_warehouse.ted import build_ted

    dec, ted = Path(out) / "dec", Path(out) / "ted"
    dec.mkdir(parents=True)
    ted.mkdir()
    started = time.perf_counter()
    meta = decode_shards(list_shards(root, "cmu_stretch").shards, dec)
    build_ted(open_decoded(dec), ted)
    print(
        json.dumps(
            {
                "rows": meta.rows,
                "episodes": meta.episodes,
                "compute_s": time.perf_counter() - started,
            }
        )
    )


def child_torchrl(root: str, out: str) -> None:
    import pickle

    import torch
    from torchrl.data.datasets.openx import _format_data, _make_tensordict_image_conv

    from episode_warehouse.sources.openx.members import iter_members
    from episode_warehouse.sources.openx.shards import list_shards

    shards = list_shards(root, "cmu_stretch").shards
    started = time.perf_counter()
    td_data = None
    idx = episode = 0
    for shard in shards:
        for _, payload in iter_members(shard):
            steps = pickle.loads(payload)["steps"]
            current = torch.stack([_make_tensordict_image_conv(s) for s in steps]).contiguous()
            _format_data(current, episode)
            current = current.exclude("language_instruction")
            if td_data is None:  # TorchRL counts frames in a first pass; we give it the count
                total = int(sum(json.loads(Path(root, "counts.json").read_text())))
                td_data = current[0].expand(total).memmap_like(Path(out) / "td")
            td_data[idx : idx + len(current)] = current
            idx += len(current)
            episode += 1
    print(
        json.dumps({"rows": idx, "episodes": episode, "compute_s": time.perf_counter() - started})
    )


def measure(root: Path, workdir: str) -> dict:
    from episode_warehouse.sources.openx.members import iter_members
    from episode_warehouse.sources.openx.shards import list_shards

    if not (root / "counts.json").exists():
        import pickle

        counts = [
            len(pickle.loads(p)["steps"])
            for s in list_shards(str(root), "cmu_stretch").shards
            for _, p in iter_members(s)
        ]
        (root / "counts.json").write_text(json.dumps(counts))
    ours = run_child("bench.openx_decode", ["_ours", str(root), workdir + "/ours"])
    ref = run_child("bench.openx_decode", ["_torchrl", str(root), workdir + "/torchrl"])
    frames = ours.result["rows"]
    assert ref.result["rows"] == frames
    return {
        "episodes": ours.result["episodes"],
        "frames": frames,
        "ours_wall_s": round(ours.seconds, 2),
        "ours_compute_s": round(ours.result["compute_s"], 2),
        "ours_fps": round(frames / ours.result["compute_s"]),
        "ours_episodes_per_s": round(ours.result["episodes"] / ours.result["compute_s"], 1),
        "ours_peak_anon_mb": round(ours.peak_anon_mb),
        "torchrl_wall_s": round(ref.seconds, 2),
        "torchrl_compute_s": round(ref.result["compute_s"], 2),
        "torchrl_fps": round(frames / ref.result["compute_s"]),
        "torchrl_episodes_per_s": round(ours.result["episodes"] / ref.result["compute_s"], 1),
        "torchrl_peak_anon_mb": round(ref.peak_anon_mb),
        "speedup_vs_torchrl_compute": round(ref.result["compute_s"] / ours.result["compute_s"], 2),
        "speedup_vs_torchrl_wall": round(ref.seconds / ours.seconds, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=scaled(120, 6))
    parser.add_argument("--image-size", type=int, default=scaled(128, 32))
    args = parser.parse_args()
    report = {}
    for n in (args.episodes, args.episodes * 4):
        root = make_dataset(n, args.image_size)
        with tempfile.TemporaryDirectory(dir=DATA) as tmp:
            report[f"{n}_episodes"] = measure(root, tmp)
    for size, figures in report.items():
        print(size)
        for key, value in figures.items():
            print(f"  {key:24s} {value}")
    save_report("openx_decode", report)


if __name__ == "__main__":
    dispatch({"_ours": child_ours, "_torchrl": child_torchrl}, main)
