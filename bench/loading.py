"""Benchmark: sampling 256 slices x 64 steps of Atari frames, ours against TorchRL on a TED
whose ("next", "observation") is stored twice (TensorDict.load_memmap), same episodes, same run,
TorchRL's TED warm in the page cache. Ours: the storage ``replay_buffer`` gives (``TedStorage``,
each sample read at once), and TorchRL's ``TensorStorage`` over ``open_ted`` (the TED's
stand-ins, what a user who builds the buffer by hand gets).
Also: streaming throughput (EpisodeStream, slices of 64) with 0, 1 and 2 DataLoader workers.

    python -m bench.loading        # uses (or writes) bench/data/atari-C100000-n3
    python -m bench.loading --capacity 5000 --checkpoints 1   # a tiny run (the slow tests')
"""

from __future__ import annotations

import itertools
import json
import shutil
import time
from pathlib import Path

from bench.atari_decode import DATA, make_files
from bench.measure import save_report, scaled

SLICES, SLICE_LEN, BATCHES = 256, 64, 20


def _rate(rb, batches: int = BATCHES) -> float:
    rb.sample()  # warm-up
    t = time.perf_counter()
    for _ in range(batches):
        batch = rb.sample()
        assert batch["next", "observation"].shape[0] == SLICES * SLICE_LEN
    return batches * SLICES / (time.perf_counter() - t)


def shifted_collate(items):
    """``ted_collate`` plus a per-sample CPU transform as augmenting trainers run one (DrQ's
    random shift: pad 4 pixels, crop back at a random offset; numpy, one thread), costing about
    what the read costs (``transform_s_per_batch_vs_read`` in the report)."""
    from episode_warehouse.loading import ted_collate

    batch = ted_collate(items)  # read at once; then each sample shifted, in place
    observation = batch["observation"]
    for k in range(observation.shape[0]):
        observation[k] = _shift(observation[k])
    return batch


def _shift(obs):
    import numpy as np
    import torch

    padded = np.pad(obs.numpy(), ((0, 0), (4, 4), (4, 4)), mode="edge")
    dy, dx = np.random.randint(0, 9, 2)
    return torch.from_numpy(np.ascontiguousarray(padded[:, dy : dy + 84, dx : dx + 84]))


def _stream_rate(selection, workers: int, collate) -> float:
    """Slices/s of the second epoch of persistent workers (the first one starts them: with
    spawn, as torchrl makes the default, that alone takes seconds)."""
    from torch.utils.data import DataLoader

    from episode_warehouse.loading import EpisodeStream

    stream = EpisodeStream(selection, SLICE_LEN, drop_last=True)
    loader = DataLoader(stream, batch_size=32, num_workers=workers, collate_fn=collate,
                        persistent_workers=workers > 0)  # fmt: skip
    for _ in loader:
        pass
    t = time.perf_counter()
    count = sum(batch.batch_size[0] for batch in loader)
    return count / (time.perf_counter() - t)


def _transform_vs_read(selection) -> float:
    """Seconds of the transform per batch over seconds of reading and stacking it."""
    from episode_warehouse.loading import EpisodeStream, ted_collate

    items = list(itertools.islice(EpisodeStream(selection, SLICE_LEN, drop_last=True), 640))
    t = time.perf_counter()
    for k in range(0, len(items), 32):
        ted_collate(items[k : k + 32])
    read = time.perf_counter() - t
    items = list(itertools.islice(EpisodeStream(selection, SLICE_LEN, drop_last=True), 640))
    t = time.perf_counter()
    for k in range(0, len(items), 32):
        shifted_collate(items[k : k + 32])
    return (time.perf_counter() - t - read) / read


def _current(ted_dir) -> bool:
    from episode_warehouse.errors import FormatVersionError
    from episode_warehouse.ted.files import read_meta

    try:
        read_meta(ted_dir)
    except FormatVersionError:
        return False
    return True


def prepared(capacity: int | None = None, checkpoints: int | None = None) -> Path:
    """The folder of the Atari TED the loading benchmarks read (``ted/``, and ``root/``: a
    warehouse root holding it as ``atari`` ``Pong/1``), built where it is missing or of an
    older format (a fresh checkout has none). Default size: 3 checkpoints of 100,000 steps
    (300k frames), or a tiny one where ``BENCH_SIZE=tiny``. Also read by bench.lerobot_export
    and bench.root_walk."""
    from episode_warehouse.decoded import open_decoded
    from episode_warehouse.sources.atari.decode import decode_run
    from episode_warehouse.ted import build_ted

    capacity = capacity or scaled(100_000, 5000)
    checkpoints = checkpoints or scaled(3, 1)
    default = (capacity, checkpoints) == (100_000, 3)
    work = DATA / ("loading" if default else f"loading-C{capacity}-n{checkpoints}")
    ted_dir = work / "ted"
    if (ted_dir / "meta.json").exists() and not _current(ted_dir):
        shutil.rmtree(work)  # built by an older format (frames decoded, TED 4): build again
    if not (ted_dir / "meta.json").exists():  # a fresh checkout: nothing built yet
        replay = make_files(capacity, checkpoints)
        shutil.rmtree(work, ignore_errors=True)
        (work / "dec").mkdir(parents=True)
        ted_dir.mkdir()
        decode_run(replay, list(range(checkpoints)), work / "dec", workers=2)
        build_ted(open_decoded(work / "dec"), ted_dir)
    target = work / "root" / "ted" / "atari" / "Pong" / "1"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        target.symlink_to(ted_dir.resolve())
    return work


def main() -> None:
    import argparse

    from tensordict import TensorDict
    from torchrl.data import ReplayBuffer, SliceSampler, TensorStorage

    from episode_warehouse.catalog.rows import folder_bytes
    from episode_warehouse.loading import Selection, ted_collate
    from episode_warehouse.loading.ted_storage import TedStorage
    from episode_warehouse.ted import open_ted_folder
    from episode_warehouse.ted.assemble import MappedRows
    from episode_warehouse.ted.files import read_meta

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--capacity", type=int, default=scaled(100_000, 5000), help="steps per checkpoint"
    )
    parser.add_argument("--checkpoints", type=int, default=scaled(3, 1))
    args = parser.parse_args()
    work = prepared(args.capacity, args.checkpoints)
    ted_dir, twice_dir = work / "ted", work / "ted-twice"
    ours_td = open_ted_folder(ted_dir)
    if not (twice_dir / "meta.json").exists():
        full = TensorDict(
            {k: ours_td.get(k)[:] for k in ours_td.keys(True, True)}, batch_size=ours_td.batch_size
        )  # next/observation materialized
        full.memmap_(twice_dir)
    twice_td = TensorDict.load_memmap(twice_dir)

    def buffer(storage):
        sampler = SliceSampler(slice_len=SLICE_LEN, traj_key="episode", strict_length=True)
        return ReplayBuffer(storage=storage, sampler=sampler, batch_size=SLICES * SLICE_LEN)

    _rate(buffer(TensorStorage(twice_td)), 3)  # TorchRL's 4.2 GB into the page cache
    base_rate = _rate(buffer(TensorStorage(twice_td)))
    ours_rate = _rate(buffer(TedStorage(ours_td, MappedRows(ted_dir, read_meta(ted_dir)))))
    stand_in_rate = _rate(buffer(TensorStorage(ours_td)))
    report = {
        "frames": ours_td.batch_size[0],
        "torchrl_twice_slices_per_s": round(base_rate),
        "ours_slices_per_s": round(ours_rate),
        "ratio_vs_torchrl": round(ours_rate / base_rate, 2),
        "ours_tensor_storage_slices_per_s": round(stand_in_rate),
        "tensor_storage_ratio_vs_torchrl": round(stand_in_rate / base_rate, 2),
        "ours_disk_mb": round(folder_bytes(ted_dir) / 1e6),
        "torchrl_twice_disk_mb": round(folder_bytes(twice_dir) / 1e6),
    }
    report["disk_ratio"] = round(report["ours_disk_mb"] / report["torchrl_twice_disk_mb"], 3)

    # streaming over every episode, slices of 64
    import pyarrow.parquet as pq

    eps = pq.read_table(ted_dir / "episodes.parquet")
    layout_root = work / "root"
    rows = [
        ("atari", "Pong/1", e, s, n)
        for e, s, n in zip(
            eps.column("episode").to_pylist(),
            eps.column("start").to_pylist(),
            eps.column("length").to_pylist(),
            strict=True,
        )
    ]
    selection = Selection.from_rows(rows, layout_root)
    for name, collate in (("", ted_collate), ("_with_transform", shifted_collate)):
        for workers in (0, 1, 2):  # batches of 32 slices, stacked (copied) in the workers
            report[f"stream{name}_slices_per_s_{workers}_workers"] = round(
                _stream_rate(selection, workers, collate)
            )
    zero, two = report["stream_slices_per_s_0_workers"], report["stream_slices_per_s_2_workers"]
    report["stream_2_workers_vs_0"] = round(two / zero, 2)
    report["stream_with_transform_2_workers_vs_0"] = round(
        report["stream_with_transform_slices_per_s_2_workers"]
        / report["stream_with_transform_slices_per_s_0_workers"],
        2,
    )
    report["transform_s_per_batch_vs_read"] = round(_transform_vs_read(selection), 2)
    print(json.dumps(report, indent=1))
    save_report("loading", report)


if __name__ == "__main__":
    main()
