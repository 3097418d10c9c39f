"""Benchmark: a backfill of 8 CPU-bound Atari partitions on the local cluster with 1 worker
against 2 workers, same data, same run; plus the cluster's per-run overhead (enqueued -> run
started, from Dagster's run records) against the in-process ``materialize`` of one partition.

Each run decodes with one process (``EPISODE_WAREHOUSE_WORKERS=1``), so a partition is one core
of work and two workers can use both cores. Goal: >= 1.7x wall-clock speedup with 2 workers.

    python -m bench.cluster_backfill                 # 8 partitions x 40,000 steps
    python -m bench.cluster_backfill --steps 10000
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.measure import save_report, scaled, tiny

DATA = Path(__file__).parent / "data"
# a tiny run (the slow tests') backfills two partitions, one a worker: the same code, a fourth
# of the runs (the cluster's start and each run's overhead are what a tiny run costs)
PARTITIONS = scaled(
    [f"Pong/{r}" for r in range(1, 6)] + [f"Breakout/{r}" for r in range(1, 4)],
    ["Pong/1", "Breakout/1"],
)


def make_runs(steps: int) -> Path:
    """RL Unplugged files for every partition, 2 files of ``steps / 2`` steps each (once)."""
    from warehouse_fixtures.rlu_writer import file_name, write_simulated_file

    folder = DATA / f"cluster-rlu-{steps}"
    if (folder / "done").exists():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    rng = np.random.default_rng(0)
    for key in PARTITIONS:
        game, run = key.split("/")
        index = 0
        for i in range(2):
            path = folder / game / file_name(int(run), i, 2)
            index = write_simulated_file(path, steps // 2, rng, i, index)
    (folder / "done").write_text("")
    return folder


def _env(data: Path, root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "DAGSTER_HOME"}
    env |= {
        "ATARI_REPLAY_URL": str(data),
        "EPISODE_WAREHOUSE_ROOT": str(root),
        "EPISODE_WAREHOUSE_WORKERS": "1",
    }
    return env


def backfill_on(workers: int, data: Path) -> dict:
    """Wall time of one backfill of every partition (through the catalog) on a fresh cluster."""
    import dagster as dg

    from warehouse_cli.cluster import backfill, services
    from warehouse_cli.runner import stage_assets

    folder = Path(tempfile.mkdtemp(prefix="bench-cluster-"))
    root = Path(tempfile.mkdtemp(prefix="bench-root-"))
    try:
        started = time.perf_counter()
        state = services.up(folder, workers=workers, env=_env(data, root))
        up_s = time.perf_counter() - started
        instance = services.open_instance(folder)
        started = time.perf_counter()
        backfill_id = backfill.submit(
            instance, state["webserver"], "atari", PARTITIONS, stage_assets("atari", "catalog")
        )
        outcomes = backfill.wait(instance, backfill_id, PARTITIONS, lambda _: None, 1.0)
        wall = time.perf_counter() - started
        if any(o.status != "SUCCESS" for o in outcomes):
            raise RuntimeError(f"backfill failed: {outcomes}")
        records = instance.get_run_records(dg.RunsFilter(tags={"dagster/backfill": backfill_id}))
        queue_to_start = [r.start_time - r.create_timestamp.timestamp() for r in records]
        run_s = [r.end_time - r.start_time for r in records]
        return {
            "workers": workers,
            "cluster_up_s": round(up_s, 1),
            "backfill_s": round(wall, 1),
            "runs": len(records),
            "queue_to_start_s_median": round(statistics.median(queue_to_start), 1),
            "run_s_median": round(statistics.median(run_s), 1),
            "by_worker": {
                w: sum(1 for r in records if r.dagster_run.tags.get("warehouse/worker") == w)
                for w in state["workers"]
            },
        }
    finally:
        services.down(folder, drain_s=5)
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(root, ignore_errors=True)


def in_process(data: Path) -> dict:
    """``materialize`` of one partition (through the catalog) in this process, code loaded."""
    import dagster as dg

    from warehouse_cli.code_location import load_defs
    from warehouse_cli.runner import materialize_partition

    root = Path(tempfile.mkdtemp(prefix="bench-root-"))
    keep = dict(os.environ)
    os.environ.update(_env(data, root))
    try:
        t = time.perf_counter()
        load_defs()
        load_s = time.perf_counter() - t
        with dg.instance_for_test() as instance:
            t = time.perf_counter()
            materialize_partition("atari", PARTITIONS[0], "catalog", instance=instance)
            run_s = time.perf_counter() - t
        return {"code_location_load_s": round(load_s, 1), "materialize_s": round(run_s, 1)}
    finally:
        os.environ.clear()
        os.environ.update(keep)
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--steps", type=int, default=scaled(40000, 2000), help="steps per partition"
    )
    args = parser.parse_args()
    data = make_runs(args.steps)
    report: dict = {"partitions": len(PARTITIONS), "steps_per_partition": args.steps}
    report["in_process"] = in_process(data)
    if not tiny():  # a tiny run (the slow tests') starts one cluster: the same code, 2 workers
        report["one_worker"] = backfill_on(1, data)
    report["two_workers"] = backfill_on(2, data)
    if "one_worker" in report:
        report["speedup_2_vs_1"] = round(
            report["one_worker"]["backfill_s"] / report["two_workers"]["backfill_s"], 2
        )
    print(json.dumps(report, indent=1))
    save_report("cluster_backfill", report)


if __name__ == "__main__":
    main()
