"""Benchmark: streaming a selection from a bucket root against a local memmap TED and against
LeRobot's ``StreamingLeRobotDataset`` over our LeRobot export of the same episodes, same run.

One Atari partition (~30,000 steps) is built twice from the same files: into a local root and
into ``gs://bench/wh`` on gcp-storage-emulator (its own process, loopback). Frames/s of:

- ``EpisodeStream`` over the local root (the memmap baseline; each item cloned, so every byte
  is read);
- ``EpisodeStream`` over the bucket root (fresh process state: byte ranges, 4 episodes read
  ahead on 4 threads), the same fetches without read-ahead, and the ceiling: each episode's
  observation rows as one bare range request, in turn;
- ``StreamingLeRobotDataset`` over ``export_lerobot`` of the same episodes, local folder;
- ``EpisodeStream`` as a trainer runs it (every option at its default: slices of 8, batches of
  32, a DataLoader with 2 workers, ``ted_collate``) over the local root and over the bucket:
  the bucket's figure against the folder's (issue #72's goal: 0.8x).

Twice: with the emulator as shipped (one request at a time) and with it serving each
connection on a thread, as GCS serves concurrent requests. Also the bytes a 2-episode
selection fetches, against the partition's size, and the latency of a catalog query over the
bucket against the local catalog.

    python -m bench.bucket_stream
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.measure import save_report, scaled

EPISODES, LENGTHS, SEED = scaled(200, 12), (100, 200), 7
PARTITION = "Pong/1"


def build(root: str | Path) -> None:
    """The partition's decoded episodes, TED and catalog rows under ``root`` (a folder or a
    ``gs://`` URL)."""
    from episode_warehouse.incremental import build_if_changed
    from episode_warehouse.paths import WarehouseLayout
    from episode_warehouse.sources.atari.decode import decode_run
    from episode_warehouse.stages import build_ted_stage, publish_catalog_rows
    from warehouse_fixtures.atari_game import play_episode
    from warehouse_fixtures.dopamine_writer import write_run

    rng = np.random.default_rng(SEED)
    raw = Path(tempfile.mkdtemp(prefix="bench-bucket-raw-"))
    episodes = [play_episode(rng, int(n)) for n in rng.integers(*LENGTHS, EPISODES)]
    write_run(raw, episodes, scaled(10_000, 500), final_log=False, compresslevel=1)
    n = len(list(raw.glob("add_count_ckpt.*.gz")))
    layout = WarehouseLayout.from_root(root)
    lineage = {"source_url": "bench", "source_version": "bench"}
    build_if_changed(
        layout.root,
        layout.decoded_dir("atari", PARTITION),
        {"bench": SEED},
        lambda tmp: decode_run(raw, list(range(n)), tmp, workers=2, lineage=lineage),
    )
    build_ted_stage(layout, "atari", PARTITION, code_version="bench")
    publish_catalog_rows(layout, "atari", PARTITION, code_version="bench", run_id="bench")
    shutil.rmtree(raw)


def _frames_per_s(items) -> tuple[float, int]:
    from episode_warehouse.batches.refs import RowsRef

    started, frames = time.perf_counter(), 0
    for item in items:
        item = item.read() if isinstance(item, RowsRef) else item  # a stream's item: its rows
        item.clone()  # every byte of the item read (a memmap slice is lazy until then)
        frames += item.batch_size[0]
    return frames / (time.perf_counter() - started), frames


def _loader_frames_per_s(selection, seconds: float = scaled(12, 2)) -> float:
    """``EpisodeStream`` as a trainer runs it, every option at its default: slices of 8 in
    batches of 32 from a DataLoader with 2 workers (``ted_collate``: the one batch read);
    frames/s over whole epochs (their turnover included) until ``seconds`` have passed, after
    a first one that starts the workers (an epoch here is a fraction of a second: a few
    epochs measured alone varied by 2-3x between runs)."""
    from torch.utils.data import DataLoader

    from episode_warehouse.loading import EpisodeStream, ted_collate

    stream = EpisodeStream(selection, 8, drop_last=True)
    loader = DataLoader(stream, batch_size=32, num_workers=2, collate_fn=ted_collate,
                        persistent_workers=True, prefetch_factor=4)  # fmt: skip
    for _ in loader:  # the first epoch: workers started, the TEDs opened
        pass
    frames, started, epoch = 0, time.perf_counter(), 0
    while time.perf_counter() - started < seconds:
        epoch += 1
        stream.set_epoch(epoch)
        for batch in loader:
            frames += batch.batch_size[0] * batch.batch_size[1]
    return frames / (time.perf_counter() - started)


def _median_s(fn, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return round(sorted(times)[repeat // 2], 3)


def bucket_figures(work: Path, threaded: bool, report: dict) -> None:
    """Build the partition into a bucket on an emulator in its own process, then stream it."""
    from episode_warehouse.catalog import run_query
    from episode_warehouse.gcs import gcs_client
    from episode_warehouse.loading import EpisodeStream, select_episodes
    from episode_warehouse.storage import parse_root
    from warehouse_fixtures.gcs_emulator import emulator_process

    tag = "threaded_emulator" if threaded else "emulator"
    url = "gs://bench/wh"
    with emulator_process(threaded=threaded) as endpoint:
        os.environ.update(
            STORAGE_EMULATOR_HOST=endpoint,
            EPISODE_WAREHOUSE_LOCAL_COPY=str(work / f"scratch-{tag}"),
            EPISODE_WAREHOUSE_CACHE=str(work / f"cache-{tag}"),
        )
        gcs_client(endpoint).create_bucket("bench")
        started = time.perf_counter()
        build(url)
        report[f"{tag}_build_into_bucket_s"] = round(time.perf_counter() - started, 1)
        catalog = parse_root(url)
        report[f"{tag}_catalog_query_s"] = _median_s(lambda: run_query(catalog, COUNT))
        selection = select_episodes(SQL, root=url)

        report[f"{tag}_loader_frames_per_s"] = round(_loader_frames_per_s(selection))
        stream = EpisodeStream(selection, shuffle=False)
        report[f"{tag}_read_ahead_frames_per_s"] = round(_frames_per_s(stream)[0])
        report[f"{tag}_bytes_fetched"] = stream.cache.bytes_fetched
        plain = EpisodeStream(selection, shuffle=False).cache
        rate, _ = _frames_per_s(plain.read(i, 0, int(n)) for i, n in enumerate(selection.length))
        report[f"{tag}_no_read_ahead_frames_per_s"] = round(rate)
        # the ceiling: each episode's observation rows as one bare range request, in turn
        reader = plain.reader("atari", PARTITION)
        frames = reader.file_rows(reader.meta.keys["observation"]["file"])  # .npy or .frames
        started = time.perf_counter()
        for start, n in zip(selection.start, selection.length, strict=True):
            frames[int(start) : int(start + n + 1)]  # one range request
        report[f"{tag}_bare_observation_ranges_frames_per_s"] = round(
            int(selection.length.sum()) / (time.perf_counter() - started)
        )

        two = select_episodes(SQL.replace("ORDER BY", "WHERE episode IN (3, 150) ORDER BY"), url)
        stream = EpisodeStream(two, shuffle=False)
        list(stream)
        report[f"{tag}_two_episodes_bytes_fetched"] = stream.cache.bytes_fetched


SQL = "SELECT source, partition, episode, start, length FROM episodes ORDER BY episode"
COUNT = "SELECT partition, count(*), sum(length) FROM episodes GROUP BY ALL"


def main() -> None:
    logging.basicConfig(level=logging.WARNING)
    from episode_warehouse.catalog import run_query
    from episode_warehouse.export.lerobot import ExportRequest, export_lerobot
    from episode_warehouse.loading import EpisodeStream, select_episodes
    from episode_warehouse.storage.local import LocalRoot

    work = Path(tempfile.mkdtemp(prefix="bench-bucket-"))
    report: dict = {}
    try:
        local = work / "local"
        started = time.perf_counter()
        build(local)
        report["build_local_s"] = round(time.perf_counter() - started, 1)
        here = LocalRoot(local)
        report["local_catalog_query_s"] = _median_s(lambda: run_query(here, COUNT))
        selection = select_episodes(SQL, root=local)
        report["steps"], report["episodes"] = int(selection.length.sum()), len(selection)
        ted = [p for p in (local / "ted").rglob("*") if p.is_file() and p.name != "meta.json"]
        ted_bytes = sum(p.stat().st_size for p in ted)  # frames encoded, offsets, flags
        report["partition_ted_bytes"] = ted_bytes
        report["local_memmap_frames_per_s"] = round(
            _frames_per_s(EpisodeStream(selection, shuffle=False))[0]
        )
        report["local_loader_frames_per_s"] = round(_loader_frames_per_s(selection))

        target = work / "lerobot" / "bench-pong"
        export_lerobot(ExportRequest("bench-pong", str(local), selection.rows()), target, workers=2)
        from lerobot.datasets.streaming_dataset import StreamingLeRobotDataset

        theirs = StreamingLeRobotDataset("episode-warehouse/bench-pong", root=target, shuffle=False)
        started, count = time.perf_counter(), 0
        for _ in theirs:
            count += 1
        report["lerobot_streaming_frames"] = count
        report["lerobot_streaming_frames_per_s"] = round(count / (time.perf_counter() - started))
        print(json.dumps(report), flush=True)

        for threaded in (False, True):
            bucket_figures(work, threaded, report)
            print(json.dumps(report), flush=True)
        for tag in ("emulator", "threaded_emulator"):
            rate = report[f"{tag}_read_ahead_frames_per_s"]
            report[f"{tag}_vs_local_memmap"] = round(rate / report["local_memmap_frames_per_s"], 3)
            report[f"{tag}_loader_vs_local_loader"] = round(
                report[f"{tag}_loader_frames_per_s"] / report["local_loader_frames_per_s"], 3
            )
            report[f"{tag}_vs_lerobot_streaming"] = round(
                rate / report["lerobot_streaming_frames_per_s"], 1
            )
            report[f"{tag}_two_episodes_fraction"] = round(
                report[f"{tag}_two_episodes_bytes_fetched"] / ted_bytes, 4
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(report, indent=1))
    save_report("bucket_stream", report)


if __name__ == "__main__":
    main()
