"""Benchmark: sampling 256 slices x 64 steps of Atari frames, ours against TorchRL on a TED
whose ("next", "observation") is stored twice (TensorDict.load_memmap), same episodes, same run.
Also: streaming throughput (EpisodeStream, slices of 64) with 0, 1 and 2 DataLoader workers.

    python -m bench.loading        # uses (or writes) bench/data/atari-C100000-n3
"""

from __future__ import annotations

import json
import shutil
import time

from bench.atari_decode import DATA, make_files
from bench.measure import save_report

SLICES, SLICE_LEN, BATCHES = 256, 64, 20


def _rate(rb, batches: int = BATCHES) -> float:
    rb.sample()  # warm-up
    t = time.perf_counter()
    for _ in range(batches):
        batch = rb.sample()
        assert batch["next", "observation"].shape[0] == SLICES * SLICE_LEN
    return batches * SLICES / (time.perf_counter() - t)


def main() -> None:
    from tensordict import TensorDict
    from torch.utils.data import DataLoader
    from torchrl.data import ReplayBuffer, SliceSampler, TensorStorage

    from episode_warehouse.atari.decode import decode_run
    from episode_warehouse.catalog.rows import folder_bytes
    from episode_warehouse.decoded import open_decoded
    from episode_warehouse.loading import EpisodeStream, Selection, ted_collate
    from episode_warehouse.ted import build_ted, open_ted_folder

    replay = make_files(100_000, 3)
    work = DATA / "loading"
    ted_dir, twice_dir = work / "ted", work / "ted-twice"
    if not (ted_dir / "meta.json").exists():
        shutil.rmtree(work, ignore_errors=True)
        (work / "dec").mkdir(parents=True)
        ted_dir.mkdir()
        decode_run(replay, [0, 1, 2], work / "dec", workers=2)
        build_ted(open_decoded(work / "dec"), ted_dir)
    ours_td = open_ted_folder(ted_dir)
    if not (twice_dir / "meta.json").exists():
        full = TensorDict(
            {k: ours_td.get(k)[:] for k in ours_td.keys(True, True)}, batch_size=ours_td.batch_size
        )  # next/observation materialized
        full.memmap_(twice_dir)
    twice_td = TensorDict.load_memmap(twice_dir)

    def buffer(td):
        sampler = SliceSampler(slice_len=SLICE_LEN, traj_key="episode", strict_length=True)
        return ReplayBuffer(
            storage=TensorStorage(td), sampler=sampler, batch_size=SLICES * SLICE_LEN
        )

    base_rate = _rate(buffer(twice_td))
    ours_rate = _rate(buffer(ours_td))
    report = {
        "frames": ours_td.batch_size[0],
        "torchrl_twice_slices_per_s": round(base_rate),
        "ours_slices_per_s": round(ours_rate),
        "ratio_vs_torchrl": round(ours_rate / base_rate, 2),
        "ours_disk_mb": round(folder_bytes(ted_dir) / 1e6),
        "torchrl_twice_disk_mb": round(folder_bytes(twice_dir) / 1e6),
    }
    report["disk_ratio"] = round(report["ours_disk_mb"] / report["torchrl_twice_disk_mb"], 3)

    # streaming over every episode, slices of 64
    import pyarrow.parquet as pq

    eps = pq.read_table(ted_dir / "episodes.parquet")
    layout_root = work / "root"
    target = layout_root / "ted" / "atari" / "Pong" / "1"
    if not target.exists():
        target.parent.mkdir(parents=True)
        target.symlink_to(ted_dir.resolve())
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
    for workers in (0, 1, 2):  # batches of 32 slices, stacked (copied) in the workers
        stream = EpisodeStream(selection, SLICE_LEN, drop_last=True)
        loader = DataLoader(stream, batch_size=32, num_workers=workers, collate_fn=ted_collate)
        t = time.perf_counter()
        count = sum(batch.batch_size[0] for batch in loader)
        report[f"stream_slices_per_s_{workers}_workers"] = round(count / (time.perf_counter() - t))
    print(json.dumps(report, indent=1))
    save_report("loading", report)


if __name__ == "__main__":
    main()
