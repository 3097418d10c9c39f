"""Benchmark: a 4-dataset OXE mixture streamed as VLA batches, and the standardized stage's cost.

Data: fractal20220817_data, taco_play, jaco_play and viola, written from the TFDS authors' real
features.json (256x320, 150x200 + 84x84, 224x224 + 224x224, 224x224 + 224x224 cameras),
``--episodes`` episodes of ``--steps`` steps each, built through the real stages.

1. Stage cost: the standardized stage of each dataset against its TED build (same run).
2. Streaming: ``VLADataset(mix, image_sizes={"primary": (256, 256), "wrist": (128, 128)},
   chunk=4, batch_size=64)`` through a DataLoader with 2 workers, for ``--seconds`` (and the
   same items one by one, collated by the DataLoader, for ``--baseline-seconds``); frames/s and
   the process tree's anonymous RSS sampled every 5 s (first minute against last minute: flat
   or not); file-backed RSS (the mapped frame files, shared with the page cache) apart.
   Baseline, same run, same sampling: the same items computed the way a loader without a
   standardized stage must, Octo's way in PyTorch: read the sampled step's whole episode from
   the TED, run the dataset's transform over it (Octo's per-trajectory ``traj_map``), then
   normalize, chunk and resize that step.

3. Octo, same run (``--octo-src``/``--dlimp-src``, or ``OCTO_SRC``/``DLIMP_SRC``: folders of
   Octo's and dlimp's sources, e.g. ``git clone https://github.com/octo-models/octo``; never
   copied into the project): Octo's own ``make_interleaved_dataset`` over the same four RLDS
   folders with the same settings, in a side environment the benchmark builds once in
   ``bench/data/octo-env`` (tensorflow-cpu 2.21, tensorflow-datasets 4.9.10; never a project
   dependency). It runs ``bench/octo_side.py`` there. Without the two folders the part is
   skipped and the report says so.

    python -m bench.vla_mixture [--episodes 30] [--steps 40] [--seconds 600]
        [--octo-src DIR --dlimp-src DIR [--octo-seconds 600]]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
from torch.utils.data import IterableDataset

from bench.measure import dispatch, run_child, save_report, scaled, uv

DATA = Path(__file__).parent / "data" / "vla_mixture"
SAMPLES = Path(__file__).resolve().parents[2] / "shared" / "samples" / "oxe_features"
DATASETS = ("fractal20220817_data", "taco_play", "jaco_play", "viola")
SIZES = {"primary": (256, 256), "wrist": (128, 128)}
OCTO_ENV = Path(__file__).parent / "data" / "octo-env"
# octo.data imports huggingface_hub at module level (task_augmentation.py)
OCTO_PACKAGES = ("tensorflow-cpu==2.21.0", "tensorflow-datasets==4.9.10", "absl-py", "tqdm",
                 "huggingface_hub")  # fmt: skip


def _prepare(episodes: int, steps: int) -> dict:
    from episode_warehouse.paths import WarehouseLayout
    from episode_warehouse.sources.openx.raw import mirror_openx
    from episode_warehouse.sources.openx.stage import decode_openx
    from episode_warehouse.stages import build_ted_stage
    from episode_warehouse.standardized.stage import build_standardized_stage
    from warehouse_fixtures.oxe_from_features import write_from_features

    marker = DATA / f"ready-{episodes}x{steps}.json"
    if marker.exists():
        return json.loads(marker.read_text())
    shutil.rmtree(DATA, ignore_errors=True)
    layout = WarehouseLayout.local(DATA / "wh")
    costs = {}
    for name in DATASETS:
        features = next((SAMPLES / name).rglob("features.json"))
        write_from_features(DATA / "src", name, features, [steps] * episodes)
        mirror_openx(str(DATA / "src"), name, layout.raw_dir("openx", name), root=layout.root,
                     code_version="bench")  # fmt: skip
        decode_openx(layout, name, code_version="bench")
        started = time.perf_counter()
        build_ted_stage(layout, "openx", name, code_version="bench")
        ted_s = time.perf_counter() - started
        started = time.perf_counter()
        build_standardized_stage(layout, "openx", name, code_version="bench")
        std_s = time.perf_counter() - started
        std_dir = layout.standardized_dir("openx", name)
        own = sum(f.stat().st_size for f in std_dir.rglob("*") if f.is_file()
                  and "images" not in f.parts)  # fmt: skip
        ted = sum(f.stat().st_size for f in layout.ted_dir("openx", name).rglob("*")
                  if f.is_file())  # fmt: skip
        costs[name] = {
            "ted_build_s": round(ted_s, 3),
            "standardize_s": round(std_s, 3),
            "standardize_over_ted": round(std_s / ted_s, 3),
            "ted_mb": round(ted / 1e6, 1),
            "standardized_own_mb": round(own / 1e6, 2),  # frames are hard links: not counted
        }
    marker.write_text(json.dumps(costs))
    return costs


def _tree_rss_mb() -> tuple[float, float]:
    """Anonymous and file-backed RSS of this process and its descendants (DataLoader workers),
    in MB. File-backed pages are the memory-mapped frame files, shared with the page cache."""
    from bench.measure import _descendants

    anon = files = 0
    for pid in [os.getpid(), *_descendants(os.getpid())]:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("RssAnon:"):
                    anon += int(line.split()[1])
                elif line.startswith("RssFile:"):
                    files += int(line.split()[1])
        except OSError:
            continue
    return anon / 1024, files / 1024


class _Baseline:
    """Items computed from the TED at read time (no standardized stage): the sampled step's
    episode is read whole and transformed (Octo's traj_map), then one step is taken."""

    def __init__(self, ds) -> None:
        from episode_warehouse import open_ted

        self.ds = ds
        root = DATA / "wh"
        self.teds = {p.name: open_ted("openx", p.name, root=root) for p in ds.parts}

    def item(self, part_index: int, row: int):
        import torch
        from tensordict import TensorDict

        from episode_warehouse.standardized.configs import CONFIGS
        from episode_warehouse.standardized.transforms import TRANSFORMS, Trajectory
        from episode_warehouse.standardized.vla import resize

        part = self.ds.parts[part_index]
        ted = self.teds[part.name]
        ted_row = int(part.opened.array("ted_row")[row])
        episode = int(ted["episode"][ted_row])
        starts = ted["is_init"].nonzero().squeeze(-1)
        start = int(starts[episode])
        end = int(starts[episode + 1]) if episode + 1 < len(starts) else len(ted)
        steps = ted[start:end]

        def read(path):
            key = tuple(path.split("/"))
            return steps.get(key).numpy() if key in steps.keys(True, True) else None

        n = end - start
        tr = Trajectory(read, n, np.full(n, "", dtype=object), part.name)
        out = TRANSFORMS[part.name](tr)
        at = int(np.flatnonzero(out.keep == ted_row - start)[0])
        future = np.minimum(at + np.arange(self.ds.chunk), len(out.action) - 1)
        item = TensorDict(batch_size=[])
        item["vla_action", "chunk"] = torch.from_numpy(part.action(out.action[future])[None])
        for view in ("primary", "wrist"):
            camera = CONFIGS[part.name].views[view]
            if camera is not None:
                frame = steps.get(("observation", camera))[out.keep[at]].numpy()[None]
                item["observation", "image", view] = resize(frame, SIZES[view])
            else:
                item["observation", "image", view] = torch.zeros(1, 3, *SIZES[view],
                                                                 dtype=torch.uint8)  # fmt: skip
        return item


class _Stream(IterableDataset):
    """The same draws as the VLADataset, each computed by ``kind`` ("ours" or "baseline")."""

    def __init__(self, kind: str, ds) -> None:
        super().__init__()
        self.kind, self.ds, self.baseline = kind, ds, None

    def __iter__(self):
        from torch.utils.data import get_worker_info

        if self.kind in ("ours", "ours_items"):
            yield from self.ds
            return
        self.baseline = self.baseline or _Baseline(self.ds)
        info = get_worker_info()
        shard, shards = (info.id, info.num_workers) if info else (0, 1)
        for index in range(shard, self.ds.num_samples, shards):
            yield self.baseline.item(*self.ds.draw(index))


def child_stream(kind: str, seconds: str) -> None:
    """Stream batches for ``seconds``; prints one JSON line (frames/s, RSS samples)."""
    from torch.utils.data import DataLoader

    from episode_warehouse.loading import ted_collate
    from episode_warehouse.standardized import VLADataset

    mix = [(name, 1.0) for name in DATASETS]
    batched = 64 if kind == "ours" else None  # ours: whole batches read at once (vla_batch.py)
    ds = VLADataset(mix, DATA / "wh", image_sizes=SIZES, chunk=4, num_samples=10**9,
                    batch_size=batched)  # fmt: skip
    loader = DataLoader(_Stream(kind, ds), batch_size=None if batched else 64, num_workers=2,
                        collate_fn=ted_collate, persistent_workers=True,
                        prefetch_factor=4)  # fmt: skip
    samples: list[tuple[float, float, float]] = []
    stop = threading.Event()
    started = time.perf_counter()

    def sample():
        while not stop.is_set():
            samples.append((time.perf_counter() - started, *_tree_rss_mb()))
            stop.wait(5)

    watcher = threading.Thread(target=sample, daemon=True)
    watcher.start()
    frames = 0
    first_batch = None
    for batch in loader:
        frames += len(batch)
        if first_batch is None:
            first_batch = time.perf_counter() - started
        if time.perf_counter() - started > float(seconds):
            break
    elapsed = time.perf_counter() - started
    stop.set()
    head = [a for t, a, _ in samples if t <= 60]
    tail = [a for t, a, _ in samples if t >= elapsed - 60]
    print(json.dumps({
        "frames": frames, "seconds": round(elapsed, 1),
        "frames_per_s": round(frames / elapsed, 1), "first_batch_s": round(first_batch, 2),
        "anon_rss_first_minute_mb": round(max(head), 1),
        "anon_rss_last_minute_mb": round(max(tail), 1),
        "anon_rss_peak_mb": round(max(a for _, a, _ in samples), 1),
        "file_rss_peak_mb": round(max(f for _, _, f in samples), 1),
    }))  # fmt: skip


def _octo_sources(octo: str | None, dlimp: str | None) -> list[str] | str:
    """The two source folders for Octo's side (``PYTHONPATH``), or why the part is skipped."""
    octo, dlimp = octo or os.environ.get("OCTO_SRC"), dlimp or os.environ.get("DLIMP_SRC")
    if not octo or not dlimp:
        return ("skipped: pass --octo-src and --dlimp-src (git clone https://github.com/"
                "octo-models/octo and https://github.com/kvablack/dlimp)")  # fmt: skip
    for folder, module in ((octo, "octo/data/dataset.py"), (dlimp, "dlimp/dataset.py")):
        if not (Path(folder) / module).is_file():
            raise SystemExit(f"{folder}: no {module}; pass the folder of a checkout of its source")
    return [str(Path(octo).resolve()), str(Path(dlimp).resolve())]


def _octo_env() -> Path:
    """The side environment's Python, built once with uv (TensorFlow is never the project's)."""
    python = OCTO_ENV / "bin" / "python"
    done = OCTO_ENV / "done"
    if done.exists() and done.read_text() == " ".join(OCTO_PACKAGES):
        return python
    shutil.rmtree(OCTO_ENV, ignore_errors=True)
    tool = uv("builds Octo's side environment")
    subprocess.run([tool, "venv", "--quiet", "--python", sys.executable, str(OCTO_ENV)],
                   check=True)  # fmt: skip
    subprocess.run([tool, "pip", "install", "--quiet", "--python", str(python), *OCTO_PACKAGES],
                   check=True)  # fmt: skip
    done.write_text(" ".join(OCTO_PACKAGES))
    return python


def _octo_stream(sources: list[str], seconds: int) -> dict:
    """Octo's ``make_interleaved_dataset`` over the same folders and settings (octo_side.py)."""
    from episode_warehouse.standardized import VLADataset

    mix = [(name, 1.0) for name in DATASETS]
    ours = VLADataset(mix, DATA / "wh", image_sizes=SIZES, chunk=4, num_samples=1)
    args = {
        "data_dir": str(DATA / "src"), "datasets": list(DATASETS), "seconds": seconds,
        "batch": 64, "shuffle": 1000, "chunk": 4, "sizes": SIZES,
        "action_dim": ours.action_dim, "state_dim": ours.state_dim,
    }  # fmt: skip
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sources), "TF_CPP_MIN_LOG_LEVEL": "2",
           "CUDA_VISIBLE_DEVICES": ""}  # fmt: skip
    done = subprocess.run(
        [str(_octo_env()), str(Path(__file__).parent / "octo_side.py"), json.dumps(args)],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"Octo's side failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=scaled(30, 3))
    parser.add_argument("--steps", type=int, default=scaled(40, 10))
    parser.add_argument("--seconds", type=int, default=scaled(600, 5))
    parser.add_argument("--baseline-seconds", type=int, default=scaled(120, 5))
    parser.add_argument("--octo-src", help="a folder of Octo's source (octo-models/octo)")
    parser.add_argument("--dlimp-src", help="a folder of dlimp's source (kvablack/dlimp)")
    parser.add_argument("--octo-seconds", type=int, default=scaled(600, 5))
    args = parser.parse_args()
    sources = _octo_sources(args.octo_src, args.dlimp_src)
    costs = _prepare(args.episodes, args.steps)
    ours = run_child("bench.vla_mixture", ["stream", "ours", str(args.seconds)]).result
    items = run_child("bench.vla_mixture", ["stream", "ours_items", str(args.baseline_seconds)])
    base = run_child("bench.vla_mixture", ["stream", "baseline", str(args.baseline_seconds)])
    # RSS counts the mapped frame files in every process that touched them (file-backed,
    # shared with the page cache): the anonymous part is what a loader holds
    report = {
        "datasets": list(DATASETS),
        "episodes_x_steps": [args.episodes, args.steps],
        "stage_cost": costs,
        "stream_ours": ours,
        "stream_ours_item_by_item": items.result,
        "frames_per_s_ratio_batch_vs_items": round(
            ours["frames_per_s"] / items.result["frames_per_s"], 2
        ),
        "stream_baseline_transform_at_read_time": base.result,
        "frames_per_s_ratio_vs_baseline": round(
            ours["frames_per_s"] / base.result["frames_per_s"], 2
        ),
        "anon_rss_growth_ours_mb": round(
            ours["anon_rss_last_minute_mb"] - ours["anon_rss_first_minute_mb"], 1
        ),
    }
    if isinstance(sources, str):
        report["stream_octo"] = sources
    else:
        octo = _octo_stream(sources, args.octo_seconds)
        report["stream_octo"] = octo
        report["frames_per_s_ratio_vs_octo"] = round(ours["frames_per_s"] / octo["frames_per_s"], 2)
        report["anon_rss_growth_octo_mb"] = round(
            octo["anon_rss_last_minute_mb"] - octo["anon_rss_first_minute_mb"], 1
        )
    save_report("vla_mixture", report)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    dispatch({"stream": child_stream}, main)
    sys.exit(0)
