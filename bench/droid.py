"""Benchmark: DROID end to end (#51), on fixture shards written from DROID's schema (three
180x320 JPEG cameras, ``warehouse_fixtures.droid``), all figures from one run.

1. Ingest in one process: ``--shards`` shards as shard ranges of ``--range`` shards, each range
   through mirror, decoded, TED and catalog rows; seconds and CPU seconds per shard and per
   step, and the projection to DROID (2,048 shards; steps from droid_100's mean episode of 322
   steps x 95,658 episodes): on one 16-core machine, and on 16 workers of 8 cores.
2. The same ranges backfilled on the local cluster (PostgreSQL, Redis, Celery) with one worker,
   then two; then two again with one worker killed (SIGKILL, the worker and its run) while its
   first run decodes: which ranges ran twice.
3. Disk: the three cameras' frame files against the published JPEG bytes.
4. Loading, same run, same workers (2), shuffled batches of 32 samples, each sample one step
   with its three camera frames: ours (``StepWindowDataset`` over a catalog selection of the
   first ``--loading-ranges`` ranges, frames decoded when sampled) against lerobot's
   ``LeRobotDataset`` over the same episodes exported to LeRobot v3 (lerobot's writer, AV1);
   then ``--rss-seconds`` of ours with each DataLoader worker's anonymous RSS sampled.
5. Scoring the catalog's episodes (quality signals and episode facts, openpi's idle filter
   among them): seconds per step, projected to DROID's 95,658 episodes of 322 steps.

    python -m bench.droid [--shards 64] [--per-shard 4] [--range 8] [--seconds 30]
                          [--rss-seconds 600] [--loading-ranges 2] [--skip-cluster]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from bench.measure import (
    _descendants,
    _status,
    dispatch,
    run_child,
    save_report,
    scaled,
    tiny,
)

DATA = Path(__file__).parent / "data" / "droid"
DROID_SHARDS, DROID_EPISODES, DROID_MEAN_STEPS = 2048, 95_658, 322  # droid_100: 32,212 / 100
CAMERAS = ("exterior_image_1_left", "exterior_image_2_left", "wrist_image_left")
EXPORT_REPO = "episode-warehouse/bench_droid"


def droid_source(shards: int, per_shard: int) -> Path:
    """DROID fixture shards (three 180x320 JPEG cameras), written once and kept."""
    from warehouse_fixtures.droid import write_droid

    src = DATA / f"src-{shards}x{per_shard}"
    if not (src / "done").exists():
        shutil.rmtree(src, ignore_errors=True)
        write_droid(src, shards=shards, per_shard=per_shard, keep=False)
        (src / "done").write_text("")
    return src


def _ranges(shards: int, per_range: int) -> list[str]:
    from episode_warehouse.sources.openx.shard_ranges import plan_ranges

    return [r.key for r in plan_ranges("droid", shards, per_range)]


def _published_jpeg_bytes(src: Path) -> int:
    from episode_warehouse.tfrecord.example import parse_example
    from episode_warehouse.tfrecord.records import iter_records

    total = 0
    for shard in sorted((src / "droid" / "1.0.1").glob("droid-train.tfrecord-*")):
        with open(shard, "rb") as fh:
            for _, data in iter_records(fh, str(shard)):
                features = parse_example(data).features.feature
                for camera in CAMERAS:
                    values = features[f"steps/observation/{camera}"].bytes_list.value
                    total += sum(len(b) for b in values)
    return total


def _cpu_s() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime


def child_ingest(src: str, shards: str, per_range: str) -> None:
    """Every range through mirror, decoded, TED and catalog rows, in this process."""
    from episode_warehouse.paths import WarehouseLayout
    from episode_warehouse.sources.openx.raw import mirror_openx
    from episode_warehouse.sources.openx.stage import decode_openx
    from episode_warehouse.stages import build_ted_stage, publish_catalog_rows
    from episode_warehouse.standardized.stage import build_standardized_stage

    root = DATA / "root"
    shutil.rmtree(root, ignore_errors=True)
    layout = WarehouseLayout.local(root)
    stages = {"mirror": 0.0, "decoded": 0.0, "ted": 0.0, "catalog": 0.0}
    wall, cpu = time.perf_counter(), _cpu_s()
    for key in _ranges(int(shards), int(per_range)):
        t = time.perf_counter()
        mirror_openx(src, key, layout.raw_dir("openx", key), root=layout.root, code_version="b")
        stages["mirror"] += time.perf_counter() - t
        t = time.perf_counter()
        decode_openx(layout, key, code_version="b")
        stages["decoded"] += time.perf_counter() - t
        t = time.perf_counter()
        build_ted_stage(layout, "openx", key, code_version="b")
        stages["ted"] += time.perf_counter() - t
        t = time.perf_counter()
        publish_catalog_rows(layout, "openx", key, code_version="b", run_id="bench")
        stages["catalog"] += time.perf_counter() - t
    wall, cpu = time.perf_counter() - wall, _cpu_s() - cpu
    for key in _ranges(int(shards), int(per_range)):  # for the loader (not timed)
        build_standardized_stage(layout, "openx", key, code_version="b")
    from episode_warehouse.catalog import run_query

    _, ((steps, episodes),) = run_query(
        layout.root, "SELECT sum(length), count(*) FROM episodes WHERE dataset = 'droid'"
    )
    frames = sum(
        (root / "ted" / "openx" / key / "observation" / f"{c}.frames").stat().st_size
        for key in _ranges(int(shards), int(per_range))
        for c in CAMERAS
    )
    print(json.dumps({"wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "steps": int(steps),
                      "episodes": int(episodes), "frame_file_bytes": frames,
                      "stages_s": {k: round(v, 1) for k, v in stages.items()}}))  # fmt: skip


def _cluster_env(src: Path, root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "DAGSTER_HOME"}
    return env | {"OPENX_URL": str(src), "EPISODE_WAREHOUSE_ROOT": str(root)}


def _kill_when_decoding(instance, backfill_id: str, state: dict, done: dict) -> None:
    """SIGKILL the worker (and its run) that first runs an openx_episodes step."""
    import dagster as dg

    from resources.worker import WORKER_TAG
    from warehouse_cli import processes

    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and "killed" not in done:
        records = instance.get_run_records(dg.RunsFilter(tags={"dagster/backfill": backfill_id}))
        for record in records:
            run = record.dagster_run
            started = instance.get_records_for_run(
                run.run_id, of_type=dg.DagsterEventType.STEP_START
            ).records
            if run.tags.get(WORKER_TAG) and any(
                (r.event_log_entry.step_key or "").endswith("openx_episodes") for r in started
            ):
                name = run.tags[WORKER_TAG].split("@")[0]
                pid = state["services"][name]
                for p in {pid, *processes.descendants(pid)}:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(p, signal.SIGKILL)
                done["killed"] = run.tags["dagster/partition"]
                return
        time.sleep(0.3)


def cluster_backfill(src: Path, partitions: list[str], workers: int, kill: bool) -> dict:
    """Wall time of one backfill of ``partitions`` (through the catalog) on a fresh cluster."""
    from warehouse_cli.cluster import backfill, services
    from warehouse_cli.runner import stage_assets

    folder = Path(tempfile.mkdtemp(prefix="bench-droid-cluster-"))
    root = Path(tempfile.mkdtemp(prefix="bench-droid-root-"))
    try:
        state = services.up(folder, workers=workers, env=_cluster_env(src, root))
        instance = services.open_instance(folder)
        started = time.perf_counter()
        backfill_id = backfill.submit(
            instance, state["webserver"], "openx", partitions, stage_assets("openx", "catalog")
        )
        done: dict = {}
        killer = None
        if kill:
            killer = threading.Thread(
                target=_kill_when_decoding, args=(instance, backfill_id, state, done), daemon=True
            )
            killer.start()
        outcomes = backfill.wait(instance, backfill_id, partitions, lambda _: None, 1.0, 1800)
        wall = time.perf_counter() - started
        if killer is not None:
            killer.join(timeout=5)
        from episode_warehouse.catalog import run_query
        from episode_warehouse.storage.local import LocalRoot

        _, ((episodes,),) = run_query(LocalRoot(root), "SELECT count(*) FROM episodes")
        return {
            "workers": workers,
            "backfill_s": round(wall, 1),
            "succeeded": sum(o.status == "SUCCESS" for o in outcomes),
            "ran_twice": sorted(o.partition for o in outcomes if o.runs > 1),
            "killed_while_decoding": done.get("killed"),
            "catalog_episodes": int(episodes),
        }
    finally:
        services.down(folder, drain_s=5)
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(root, ignore_errors=True)


def _selection_rows() -> list[tuple]:
    """The episodes the loaders compare on: those of the first ``$BENCH_DROID_RANGES`` ranges
    (the LeRobot export's encode is the slow part of this benchmark)."""
    from episode_warehouse.catalog import run_query
    from episode_warehouse.storage.local import LocalRoot

    _, rows = run_query(
        LocalRoot(DATA / "root"),
        "SELECT source, partition, episode, start, length FROM episodes "
        "WHERE dataset = 'droid' ORDER BY partition, episode",
    )
    keep = sorted({r[1] for r in rows})[: int(os.environ.get("BENCH_DROID_RANGES", "2"))]
    return [tuple(r) for r in rows if r[1] in keep]


def child_export() -> None:
    """The ranges' episodes as a LeRobot v3 dataset with video (lerobot's writer, AV1)."""
    from episode_warehouse.export.lerobot import ExportRequest, export_lerobot

    shutil.rmtree(DATA / "lerobot", ignore_errors=True)
    t = time.perf_counter()
    request = ExportRequest("bench_droid", str(DATA / "root"), _selection_rows(), video=True)
    export_lerobot(request, DATA / "lerobot", workers=2)
    video = sum(p.stat().st_size for p in (DATA / "lerobot").rglob("*.mp4"))
    print(json.dumps({"export_s": round(time.perf_counter() - t, 1), "mp4_bytes": video}))


def _ours():
    from episode_warehouse.loading import Selection, StepWindowDataset, ted_collate

    selection = Selection.from_rows(_selection_rows(), DATA / "root")
    windows = {("observation", c): [0] for c in CAMERAS}
    return StepWindowDataset(selection, windows), ted_collate


def _worker_anon_mb() -> dict[int, float]:
    return {p: _status(p).get("RssAnon", 0) / 1024 for p in _descendants(os.getpid())}


def child_stream(kind: str, seconds: str) -> None:
    """Shuffled batches of 32 with 2 workers for ``seconds``: samples/s, and each worker's
    anonymous RSS in the first and the last minute (one JSON line)."""
    from torch.utils.data import DataLoader

    if kind == "lerobot":
        from lerobot.datasets.lerobot_dataset import LeRobotDataset

        dataset, collate = LeRobotDataset(EXPORT_REPO, root=DATA / "lerobot"), None
    else:
        dataset, collate = _ours()
    loader = DataLoader(dataset, batch_size=32, shuffle=True, num_workers=2, collate_fn=collate,
                        persistent_workers=True, prefetch_factor=4)  # fmt: skip
    rss: list[tuple[float, dict[int, float]]] = []
    stop, started = threading.Event(), [0.0]

    def watch():
        while not stop.is_set():
            rss.append((time.perf_counter() - started[0], _worker_anon_mb()))
            stop.wait(2)

    watcher = threading.Thread(target=watch, daemon=True)
    count = 0
    while True:
        for _batch in loader:
            if not started[0]:
                started[0] = time.perf_counter()
                watcher.start()
                continue
            count += 32
            if time.perf_counter() - started[0] > float(seconds):
                break
        else:
            continue
        break
    elapsed = time.perf_counter() - started[0]
    stop.set()
    window = min(60.0, elapsed / 4)
    per_worker_first = max((max(m.values(), default=0) for t, m in rss if t <= window), default=0)
    per_worker_last = max(
        (max(m.values(), default=0) for t, m in rss if t >= elapsed - window), default=0
    )
    print(json.dumps({"samples_per_s": round(count / elapsed, 1), "seconds": round(elapsed, 1),
                      "worker_anon_rss_first_window_mb": round(per_worker_first, 1),
                      "worker_anon_rss_last_window_mb": round(per_worker_last, 1),
                      "worker_anon_rss_peak_mb": round(max(
                          (max(m.values(), default=0) for _, m in rss), default=0), 1),
                      "rss_window_s": round(window)}))  # fmt: skip


def child_idle() -> None:
    """Seconds per step of scoring the catalog's episodes (the quality signals and the episode
    facts, openpi's idle filter among them) over every range's TED, warm; and of the idle
    filter alone on DROID-length episodes."""
    import pyarrow.parquet as pq

    from episode_warehouse.catalog.episode_facts import episode_fact_columns
    from episode_warehouse.catalog.idle import nonidle_ranges
    from episode_warehouse.catalog.quality import quality_columns
    from episode_warehouse.ted.files import read_meta
    from episode_warehouse.ted.open import open_ted_folder

    teds = sorted((DATA / "root" / "ted" / "openx").glob("droid@*"))

    def score(folder):
        table = pq.read_table(folder / "episodes.parquet")
        td = open_ted_folder(folder)
        returns = table.column("return").to_numpy(zero_copy_only=False).astype(np.float64)
        quality_columns(td, table.column("start").to_numpy(), table.column("length").to_numpy(),
                        returns)  # fmt: skip
        episode_fact_columns(td, table, read_meta(folder).extra.get("texts", {}))
        return table.num_rows, int(sum(table.column("length").to_pylist()))

    score(teds[0])  # warm: imports and first calls are not the per-step cost
    episodes = steps = 0
    t = time.perf_counter()
    for folder in teds:
        n, m = score(folder)
        episodes, steps = episodes + n, steps + m
    elapsed = time.perf_counter() - t
    rng = np.random.default_rng(0)
    velocities = [rng.normal(size=(DROID_MEAN_STEPS, 7)) for _ in range(2000)]
    for v in velocities[::2]:
        v[50:120] = v[50]  # an idle stretch
    t = time.perf_counter()
    for v in velocities:
        nonidle_ranges(v)
    filter_s = (time.perf_counter() - t) / len(velocities)
    print(json.dumps({"scoring_s_per_step": elapsed / steps, "ranges": len(teds),
                      "episodes": episodes, "steps": steps,
                      "filter_s_per_322_step_episode": filter_s}))  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shards", type=int, default=scaled(64, 4))
    parser.add_argument("--per-shard", type=int, default=scaled(4, 1))
    parser.add_argument("--range", type=int, default=scaled(8, 2))
    parser.add_argument("--seconds", type=int, default=scaled(30, 3))
    parser.add_argument("--rss-seconds", type=int, default=scaled(600, 0))
    parser.add_argument("--skip-cluster", action="store_true")
    parser.add_argument("--loading-ranges", type=int, default=scaled(2, 2))
    args = parser.parse_args()
    os.environ["BENCH_DROID_RANGES"] = str(args.loading_ranges)
    src = droid_source(args.shards, args.per_shard)
    report: dict = {"shards": args.shards, "episodes_per_shard": args.per_shard,
                    "shards_per_range": args.range}  # fmt: skip
    ingest = run_child("bench.droid", ["ingest", str(src), str(args.shards), str(args.range)])
    got = ingest.result
    steps_per_shard = DROID_EPISODES * DROID_MEAN_STEPS / DROID_SHARDS
    cpu_per_step = got["cpu_s"] / got["steps"]
    report["ingest"] = {
        **got,
        "peak_anon_mb": round(ingest.peak_anon_mb, 1),
        "wall_s_per_shard": round(got["wall_s"] / args.shards, 2),
        "cpu_ms_per_step": round(1000 * cpu_per_step, 2),
        "projection_droid_steps_per_shard": round(steps_per_shard),
        "projection_droid_cpu_hours": round(
            cpu_per_step * steps_per_shard * DROID_SHARDS / 3600, 1
        ),  # fmt: skip
        "projection_hours_one_16_core_machine": round(
            cpu_per_step * steps_per_shard * DROID_SHARDS / 16 / 3600, 1
        ),
        "projection_hours_16_workers_of_8_cores": round(
            cpu_per_step * steps_per_shard * DROID_SHARDS / 128 / 3600, 2
        ),
    }
    published = _published_jpeg_bytes(src)
    report["disk_frames_vs_published_jpeg"] = round(got["frame_file_bytes"] / published, 4)
    report["published_jpeg_bytes"] = published
    if not args.skip_cluster:
        partitions = _ranges(args.shards, args.range)
        report["cluster"] = {}
        if not tiny():  # a tiny run (the slow tests') runs the one backfill with the kill only
            one = cluster_backfill(src, partitions, 1, kill=False)
            two = cluster_backfill(src, partitions, 2, kill=False)
            report["cluster"] = {"one_worker": one, "two_workers": two,
                                 "speedup_2_vs_1": round(one["backfill_s"] / two["backfill_s"],
                                                         2)}  # fmt: skip
        killed = cluster_backfill(src, partitions, 2, kill=True)
        report["cluster"]["two_workers_one_killed"] = killed
    report["lerobot_export"] = run_child("bench.droid", ["export"]).result
    best: dict[str, dict] = {}
    for _ in range(2):
        for kind in ("ours", "lerobot"):
            got = run_child("bench.droid", ["stream", kind, str(args.seconds)]).result
            if kind not in best or got["samples_per_s"] > best[kind]["samples_per_s"]:
                best[kind] = got
    report["loading"] = best
    report["loading_ours_vs_lerobot"] = round(
        best["ours"]["samples_per_s"] / best["lerobot"]["samples_per_s"], 2
    )
    if args.rss_seconds:
        report["ours_long_run"] = run_child(
            "bench.droid", ["stream", "ours", str(args.rss_seconds)]
        ).result
    idle = run_child("bench.droid", ["idle"]).result
    report["idle"] = {
        **idle,
        "projection_droid_scoring_minutes": round(
            idle["scoring_s_per_step"] * DROID_MEAN_STEPS * DROID_EPISODES / 60, 1
        ),
        "projection_droid_filter_minutes": round(
            idle["filter_s_per_322_step_episode"] * DROID_EPISODES / 60, 2
        ),
    }
    save_report("droid", report)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    dispatch(
        {"ingest": child_ingest, "export": child_export, "stream": child_stream,
         "idle": child_idle},
        main,
    )  # fmt: skip
    sys.exit(0)
