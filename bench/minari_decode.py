"""Benchmark: a Minari HDF5 dataset into a TED (decoded episodes + TED build) against TorchRL's
``MinariExperienceReplay(load_from_local_minari=True)`` on the same file, same run, each in a
measured child process (wall time, peak memory). Goal: >= 3x steps/s, heap bounded by one
episode where TorchRL's holds the whole file.

Two datasets, written by Minari's own ``create_dataset_from_buffers`` (HDF5): a 1M-step state
dataset (17-dim observations, 6-dim actions: HalfCheetah's shapes, 1,000 episodes of 1,000
steps) and a 100k-step image dataset (32x32x3 frames stored raw, ``jpeg_encoding=False``:
TorchRL reads JPEG bytes as they are and cannot decode them; 100 episodes of 1,000 steps).

Note: torchrl 0.14.1 keeps ``memmap_like`` of the tensors it fills, so its replay buffer reads
zeros (tests/episode_warehouse/sources/minari) and it never writes the values; its time and
memory are what a user pays all the same. ``torchrl_fixed`` writes them (``memmap``): what a
loader that returns the data costs.

    python -m bench.minari_decode [--state-steps 1000000] [--image-steps 100000]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

import numpy as np

from bench.measure import dispatch, run_child, save_report, scaled

DATA = Path(__file__).parent / "data" / "minari"


def _write(dataset_id: str, steps: int, episode_len: int, image: bool) -> None:
    import gymnasium as gym
    import minari
    from minari.data_collector import EpisodeBuffer

    os.environ["MINARI_DATASETS_PATH"] = str(DATA / "datasets")
    if (DATA / "datasets" / dataset_id / "data" / "metadata.json").exists():
        return
    rng = np.random.default_rng(0)
    if image:
        obs_space = gym.spaces.Box(0, 255, (32, 32, 3), np.uint8)
    else:
        obs_space = gym.spaces.Box(-np.inf, np.inf, (17,), np.float64)
    act_space = gym.spaces.Box(-1.0, 1.0, (6,), np.float32)
    buffers = []
    for e in range(steps // episode_len):
        n = episode_len
        if image:
            obs = rng.integers(0, 256, (n + 1, 32, 32, 3), dtype=np.uint8)
        else:
            obs = rng.normal(size=(n + 1, 17))
        buffers.append(
            EpisodeBuffer(
                id=e,
                seed=e,
                observations=obs,
                actions=rng.uniform(-1, 1, (n, 6)).astype(np.float32),
                rewards=rng.normal(size=n),
                terminations=np.zeros(n, bool),
                truncations=np.eye(1, n, n - 1, dtype=bool)[0],
            )
        )
    minari.create_dataset_from_buffers(
        dataset_id,
        buffers,
        observation_space=obs_space,
        action_space=act_space,
        algorithm_name="random",
        description="bench.minari_decode",
        jpeg_encoding=False,
    )


def child_ours(dataset_id: str) -> None:
    """Decode and lay out the TED; prints one JSON line."""
    from episode_warehouse.decoded import open_decoded
    from episode_warehouse.sources.minari.decode import decode_minari
    from episode_warehouse.ted import build_ted

    work = DATA / "work-ours"
    shutil.rmtree(work, ignore_errors=True)
    started = time.perf_counter()
    decode_minari(DATA / "datasets" / dataset_id, work / "decoded")
    build_ted(open_decoded(work / "decoded"), work / "ted")
    rows = json.loads((work / "ted" / "meta.json").read_text())["rows"]
    print(json.dumps({"rows": rows, "seconds": time.perf_counter() - started}))


def child_torchrl(dataset_id: str, fixed: str = "") -> None:
    """TorchRL's loader as shipped, or (``fixed``) with its filled tensors written out
    (``memmap`` where it calls ``memmap_like``: what a working loader costs); prints one line."""
    from tensordict import TensorDict
    from torchrl.data.datasets.minari_data import MinariExperienceReplay

    if fixed:
        TensorDict.memmap_like = lambda self, prefix=None, **kw: self.memmap(prefix)  # type: ignore[method-assign]

    os.environ["MINARI_DATASETS_PATH"] = str(DATA / "datasets")
    work = DATA / "work-torchrl"
    shutil.rmtree(work, ignore_errors=True)
    started = time.perf_counter()
    rb = MinariExperienceReplay(
        dataset_id, batch_size=32, root=work, load_from_local_minari=True, download=True
    )
    print(json.dumps({"rows": len(rb), "seconds": time.perf_counter() - started}))


def measure(dataset_id: str, steps: int, image: bool) -> dict:
    _write(dataset_id, steps, 1000, image)
    file = DATA / "datasets" / dataset_id / "data" / "main_data.hdf5"
    ours = run_child("bench.minari_decode", ["ours", dataset_id])
    theirs = run_child("bench.minari_decode", ["torchrl", dataset_id])
    fixed = run_child("bench.minari_decode", ["torchrl", dataset_id, "fixed"])
    return {
        "steps": steps,
        "file_mb": round(file.stat().st_size / 1e6, 1),
        # the work itself (the child's own clock: after imports), then whole processes
        "ours_s": round(ours.result["seconds"], 2),
        "torchrl_s": round(theirs.result["seconds"], 2),
        "ours_steps_per_s": round(steps / ours.result["seconds"]),
        "torchrl_steps_per_s": round(steps / theirs.result["seconds"]),
        "speedup": round(theirs.result["seconds"] / ours.result["seconds"], 2),
        "process_s": [round(ours.seconds, 2), round(theirs.seconds, 2)],
        # torchrl with its values written (memmap): what a loader that returns data costs
        "torchrl_fixed_s": round(fixed.result["seconds"], 2),
        "speedup_vs_fixed": round(fixed.result["seconds"] / ours.result["seconds"], 2),
        "torchrl_fixed_peak_anon_mb": round(fixed.peak_anon_mb),
        "ours_peak_anon_mb": round(ours.peak_anon_mb),
        "torchrl_peak_anon_mb": round(theirs.peak_anon_mb),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--state-steps", type=int, default=scaled(1_000_000, 5000))
    parser.add_argument("--image-steps", type=int, default=scaled(100_000, 2000))
    args = parser.parse_args()
    report = {
        "state": measure(f"bench/state/s{args.state_steps}-v0", args.state_steps, False),
        "image": measure(f"bench/image/s{args.image_steps}-v0", args.image_steps, True),
    }
    save_report("minari_decode", report)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    dispatch({"ours": child_ours, "torchrl": child_torchrl}, main)
    sys.exit(0)
