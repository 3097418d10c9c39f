"""Benchmark: streaming a selection from a bucket root against a local memmap TED and against
LeRobot's ``StreamingLeRobotDataset`` over our LeRobot export of the same episodes, same run.

One Atari partition (~30,000 steps) is built twice from the same files: into a local root and
into ``gs://bench/wh`` on gcp-storage-emulator (its own process, loopback). Frames/s of:

- ``EpisodeStream`` over the local root (the memmap baseline; each item cloned, so every byte
  is read);
- ``EpisodeStream`` over the bucket root (fresh process state: byte ranges, read-ahead of 4
  episodes), and the same fetches without read-ahead;
- ``StreamingLeRobotDataset`` over ``export_lerobot`` of the same episodes, local folder.

Also the bytes a 2-episode selection fetches, against the partition's size.

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

from bench.measure import save_report

EPISODES, LENGTHS, SEED = 200, (100, 200), 7
PARTITION = "Pong/1"


def build(root: Path) -> None:
    """The partition's decoded episodes, TED and catalog rows under ``root`` (either kind)."""
    from episode_warehouse.atari.decode import decode_run
    from episode_warehouse.fixtures.atari_game import play_episode
    from episode_warehouse.fixtures.dopamine_writer import write_run
    from episode_warehouse.incremental import build_if_changed
    from episode_warehouse.paths import WarehouseLayout
    from episode_warehouse.stages import build_ted_stage, publish_catalog_rows

    rng = np.random.default_rng(SEED)
    raw = Path(tempfile.mkdtemp(prefix="bench-bucket-raw-"))
    episodes = [play_episode(rng, int(n)) for n in rng.integers(*LENGTHS, EPISODES)]
    write_run(raw, episodes, 10_000, final_log=False, compresslevel=1)
    n = len(list(raw.glob("add_count_ckpt.*.gz")))
    layout = WarehouseLayout(root)
    lineage = {"source_url": "bench", "source_version": "bench"}
    build_if_changed(
        layout.decoded_dir("atari", PARTITION),
        {"bench": SEED},
        lambda tmp: decode_run(raw, list(range(n)), tmp, workers=2, lineage=lineage),
    )
    build_ted_stage(layout, "atari", PARTITION, code_version="bench")
    publish_catalog_rows(layout, "atari", PARTITION, code_version="bench", run_id="bench")
    shutil.rmtree(raw)


def _frames_per_s(items) -> tuple[float, int]:
    started, frames = time.perf_counter(), 0
    for item in items:
        item.clone()  # every byte of the item read (a memmap slice is lazy until then)
        frames += item.batch_size[0]
    return frames / (time.perf_counter() - started), frames


def main() -> None:
    logging.basicConfig(level=logging.WARNING)
    from episode_warehouse.bucket.root import BucketRoot
    from episode_warehouse.export.lerobot import ExportRequest, export_lerobot
    from episode_warehouse.fixtures.gcs_emulator import emulator_process
    from episode_warehouse.gcs import gcs_client
    from episode_warehouse.loading import EpisodeStream, select_episodes
    from episode_warehouse.paths import WarehouseLayout

    work = Path(tempfile.mkdtemp(prefix="bench-bucket-"))
    report: dict = {}
    sql = "SELECT source, partition, episode, start, length FROM episodes ORDER BY episode"
    try:
        with emulator_process() as endpoint:
            os.environ.update(
                STORAGE_EMULATOR_HOST=endpoint,
                EPISODE_WAREHOUSE_SCRATCH=str(work / "scratch"),
                EPISODE_WAREHOUSE_CACHE=str(work / "cache"),
            )
            gcs_client(endpoint).create_bucket("bench")
            url = "gs://bench/wh"
            local = work / "local"
            started = time.perf_counter()
            build(local)
            report["build_local_s"] = round(time.perf_counter() - started, 1)
            started = time.perf_counter()
            build(WarehouseLayout.from_root(url).root)
            report["build_into_bucket_s"] = round(time.perf_counter() - started, 1)

            local_sel = select_episodes(sql, root=local)
            started = time.perf_counter()
            bucket_sel = select_episodes(sql, root=url)
            report["select_over_bucket_s"] = round(time.perf_counter() - started, 3)
            started = time.perf_counter()
            select_episodes(sql, root=local)
            report["select_local_s"] = round(time.perf_counter() - started, 3)
            report["steps"] = int(local_sel.length.sum())
            report["episodes"] = len(local_sel)

            rate, frames = _frames_per_s(EpisodeStream(local_sel, shuffle=False))
            report["local_memmap_frames_per_s"] = round(rate)
            stream = EpisodeStream(bucket_sel, shuffle=False)
            rate, _ = _frames_per_s(stream)
            report["bucket_read_ahead_frames_per_s"] = round(rate)
            report["bucket_bytes_fetched"] = stream.cache.bytes_fetched
            plain = EpisodeStream(bucket_sel, shuffle=False)
            rate, _ = _frames_per_s(
                plain.cache.read(i, 0, int(n)) for i, n in enumerate(bucket_sel.length)
            )
            report["bucket_no_read_ahead_frames_per_s"] = round(rate)

            two = select_episodes(
                sql.replace("ORDER BY", "WHERE episode IN (3, 150) ORDER BY"), url
            )
            stream = EpisodeStream(two, shuffle=False)
            list(stream)
            record = BucketRoot.parse(url)
            ted_bytes = sum(
                int(f["size"])
                for f in json.loads(record.store().read_bytes(f"ted/atari/{PARTITION}/meta.json"))[
                    "published"
                ]["files"].values()
            )
            report["two_episodes_bytes_fetched"] = stream.cache.bytes_fetched
            report["partition_ted_bytes"] = ted_bytes
            report["two_episodes_fraction_of_partition"] = round(
                stream.cache.bytes_fetched / ted_bytes, 4
            )

        target = work / "lerobot" / "bench-pong"
        export_lerobot(ExportRequest("bench-pong", str(local), local_sel.rows()), target, workers=2)
        from lerobot.datasets.streaming_dataset import StreamingLeRobotDataset

        theirs = StreamingLeRobotDataset("episode-warehouse/bench-pong", root=target, shuffle=False)
        started, count = time.perf_counter(), 0
        for _ in theirs:
            count += 1
        lerobot_rate = count / (time.perf_counter() - started)
        report["lerobot_streaming_frames"] = count
        report["lerobot_streaming_frames_per_s"] = round(lerobot_rate)
        report["bucket_vs_local_memmap"] = round(
            report["bucket_read_ahead_frames_per_s"] / report["local_memmap_frames_per_s"], 3
        )
        report["bucket_vs_lerobot_streaming"] = round(
            report["bucket_read_ahead_frames_per_s"] / lerobot_rate, 1
        )
        report["read_ahead_gain"] = round(
            report["bucket_read_ahead_frames_per_s"] / report["bucket_no_read_ahead_frames_per_s"],
            2,
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(report, indent=1))
    save_report("bucket_stream", report)


if __name__ == "__main__":
    main()
