"""Benchmark: DROID's real counts in the catalog (#59, its catalog part): 95,658 episodes over
64 shard ranges of 32 shards, their facts as DROID's catalog rows hold them, and what reads them.

Only counts matter here, so the rows are written, not ingested: each range's ``episodes`` and
``partitions`` rows through the catalog's own writer and publish path (``CatalogStore.
publish_partition``), with DROID's schema: lengths drawn around DROID's mean (~290 steps, a gamma
of shape 4), 80% successes (76k of 95,658, DROID's share), openpi's non-idle ranges (1-4 per
episode covering ~70% of the steps), building, collector, date, three instructions, and the
curation columns (content hash, step MinHash, frame hashes). Then, each the best of
``--repeats``:

- the openpi query of docs/droid.md (successful episodes, their non-idle steps; as counts and
  as every selected range fetched), through the catalog's sandbox (goal: under 2 s);
- the viewer's partition list and episode list with a filter and a sort (goal: under 1 s);
- the catalog's views rebuilt (``episode_catalog``'s work);
- the duplicate search over all 95,658 episodes (``episode_duplicates``' work, #60).

The other parts (``bench/droid_scale_plane.py``, ``bench/droid_scale_loaders.py``) run on
the 2,048-shard fixture (``warehouse_fixtures.droid_scale``: DROID's shard count, ``--per-shard``
episodes a shard, 8x8 JPEG cameras): the sensor's ticks (folder and bucket), the backfill of
every range on the local cluster, the loaders over every range and the pooled statistics, and
the loaders over ``--bucket-ranges`` ranges built into a ``gs://`` root on the emulator.

    python -m bench.droid_scale [--parts catalog,sensor,cluster,loaders,bucket] [--episodes 95658]
        [--ranges 64] [--repeats 3] [--shards 2048] [--per-shard 1] [--workers 2]
        [--seconds 60] [--rss-seconds 600] [--bucket-ranges 64]
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pyarrow as pa

from bench.measure import save_report, scaled

DATA = Path(__file__).parent / "data" / "droid_scale"
OPENPI_COUNT = (
    "SELECT count(DISTINCT (partition, episode)) AS episodes, sum(r[2] - r[1]) AS steps "
    "FROM episodes, UNNEST(nonidle_ranges) AS u(r) WHERE dataset = 'droid' AND success"
)
OPENPI_ROWS = (
    "SELECT source, partition, episode, start + r[1] AS start, r[2] - r[1] AS length "
    "FROM episodes, UNNEST(nonidle_ranges) AS u(r) WHERE dataset = 'droid' AND success"
)
BUILDINGS = (
    "AUTOLab",
    "ILIAD",
    "IRIS",
    "RAIL",
    "REAL",
    "TRI",
    "CLVR",
    "GuptaLab",
    "IPRL",
    "PennPAL",
)


def _ranges(rng: np.random.Generator, n: int) -> list[list[int]]:
    cuts = np.sort(rng.choice(np.arange(1, n), size=min(n - 1, int(rng.integers(1, 8))),
                              replace=False)) if n > 2 else np.array([], int)  # fmt: skip
    edges = [0, *cuts.tolist(), n]
    pairs = [[edges[i], edges[i + 1]] for i in range(0, len(edges) - 1, 2)]
    return pairs or [[0, n]]


def _range_rows(rng: np.random.Generator, key: str, count: int, first: int) -> pa.Table:
    lengths = np.maximum(10, rng.gamma(4.0, 290 / 4.0, count).astype(np.int64))
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    success = rng.random(count) < 0.8
    ranges = [_ranges(rng, int(n)) for n in lengths]
    day = np.datetime64("2023-03-01") + rng.integers(0, 400, count).astype("timedelta64[D]")
    minhash = rng.integers(-(2**63), 2**63 - 1, (count, 64), dtype=np.int64)
    return pa.table(
        {
            "source": ["openx"] * count,
            "partition": [key] * count,
            "dataset": ["droid"] * count,
            "episode": np.arange(count, dtype=np.int64),
            "start": starts,
            "length": lengths,
            "return": success.astype(np.float64),
            "terminated": success,
            "truncated": ~success,
            "language_instruction": [f"put the object {i % 97} in the bin" for i in range(count)],
            "source_files": [[f"droid/1.0.1/droid_101-train.tfrecord-{first:05d}-of-02048"]]
            * count,
            "idle_fraction": rng.random(count) * 0.5,
            "jerk": rng.gamma(2.0, 0.5, count),
            "success": success,
            "building": [BUILDINGS[i] for i in rng.integers(0, len(BUILDINGS), count)],
            "collector_id": [f"c{i:03d}" for i in rng.integers(0, 50, count)],
            "recorded_on": day.astype("datetime64[D]").astype(object),
            "instructions": [[f"task {i}", f"task {i} again", ""] for i in range(count)],
            "nonidle_ranges": ranges,
            "nonidle_steps": [sum(b - a for a, b in r) for r in ranges],
            "defects": np.zeros(count, np.int64),
            "content_hash": [f"{first:05d}{i:027x}" for i in range(count)],
            "step_minhash": list(minhash),
            "frame_hashes": list(rng.integers(-(2**63), 2**63 - 1, (count, 9), dtype=np.int64)),
            "materialized_at": [datetime.now(UTC)] * count,
        }
    )


def write_catalog(episodes: int, ranges: int, seed: int = 0) -> Path:
    """The catalog rows of ``episodes`` DROID episodes in ``ranges`` ranges of 32 shards."""
    from episode_warehouse.catalog import CatalogStore
    from episode_warehouse.storage.local import LocalRoot

    shutil.rmtree(DATA, ignore_errors=True)
    DATA.mkdir(parents=True)
    store = CatalogStore(LocalRoot(DATA))
    rng = np.random.default_rng(seed)
    per = np.full(ranges, episodes // ranges)
    per[: episodes % ranges] += 1
    for r in range(ranges):
        key = f"droid@{32 * r:05d}-{32 * r + 31:05d}"
        table = _range_rows(rng, key, int(per[r]), 32 * r)
        row = {"source": "openx", "partition": key, "dataset": "droid",
               "frames": int(pa.compute.sum(table.column("length")).as_py()),
               "episodes": table.num_rows, "bytes_on_disk": 0, "data_version": "bench",
               "code_version": "bench", "run_id": "bench",
               "materialized_at": datetime.now(UTC), "source_url": "gs://gresearch/robotics",
               "fps": 15.0, "robot_type": "franka"}  # fmt: skip
        store.publish_partition("openx", key, table, row, {"bench": key})
    store.ensure_database(rebuild=True)
    return DATA


def _best(fn, repeats: int) -> tuple[float, object]:
    best, value = float("inf"), None
    for _ in range(repeats):
        t = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - t)
    return best, value


def catalog_part(args: argparse.Namespace) -> dict:
    """95,658 episodes' rows over 64 ranges, and what reads them."""
    from episode_warehouse.catalog import CatalogStore, run_query
    from episode_warehouse.paths import WarehouseLayout
    from episode_warehouse.stages.curation import publish_duplicates
    from episode_warehouse.storage.local import LocalRoot
    from episode_warehouse.viewer import listing

    t = time.perf_counter()
    folder = write_catalog(args.episodes, args.ranges)
    write_s = time.perf_counter() - t
    root = LocalRoot(folder)
    count_s, (_, counted) = _best(lambda: run_query(root, OPENPI_COUNT), args.repeats)
    rows_s, (_, selected) = _best(lambda: run_query(root, OPENPI_ROWS), args.repeats)
    parts_s, parts = _best(lambda: listing.partitions(root), args.repeats)
    list_s, listed = _best(
        lambda: listing.episodes(root, "success AND nonidle_steps > 100", "jerk", True),
        args.repeats,
    )
    views_s, _ = _best(lambda: CatalogStore(root).ensure_database(rebuild=True), args.repeats)
    t = time.perf_counter()
    found = publish_duplicates(WarehouseLayout.local(folder))
    duplicates_s = time.perf_counter() - t
    episodes, steps = counted[0]
    report = {
        "episodes": args.episodes,
        "ranges": args.ranges,
        "write_rows_s": round(write_s, 1),
        "openpi_count_s": round(count_s, 3),
        "openpi_episodes": episodes,
        "openpi_steps": int(steps),
        "openpi_rows_fetched_s": round(rows_s, 3),
        "openpi_ranges": len(selected),
        "viewer_partitions_s": round(parts_s, 3),
        "viewer_partitions": len(parts),
        "viewer_list_s": round(list_s, 3),
        "viewer_listed": len(listed["rows"]),
        "views_rebuilt_s": round(views_s, 3),
        "duplicate_search_s": round(duplicates_s, 2),
        "duplicates_dropped": found.meta.dropped,
    }
    return report


PARTS = ("catalog", "sensor", "cluster", "loaders", "bucket")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default=",".join(PARTS), help=f"of {', '.join(PARTS)}")
    parser.add_argument("--episodes", type=int, default=scaled(95_658, 2_000))
    parser.add_argument("--ranges", type=int, default=scaled(64, 4))
    parser.add_argument("--repeats", type=int, default=scaled(3, 1))
    parser.add_argument("--shards", type=int, default=scaled(2048, 64))
    parser.add_argument("--per-shard", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2, help="the cluster's Celery workers")
    parser.add_argument("--seconds", type=int, default=scaled(60, 4), help="the VLA loader's")
    parser.add_argument("--rss-seconds", type=int, default=scaled(600, 0))
    parser.add_argument(
        "--bucket-ranges", type=int, default=scaled(64, 1), help="ranges built into a bucket"
    )
    args = parser.parse_args()
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        parser.error(f"unknown parts {unknown}; choose among {', '.join(PARTS)}")
    from bench import droid_scale_loaders as loaders
    from bench import droid_scale_plane as plane

    report: dict = {}
    if "catalog" in parts:
        report["catalog"] = catalog_part(args)
    folder, facts = plane.shards_folder(args.shards, args.per_shard)
    report["fixture"] = facts
    root = plane.DATA / f"droid_scale_root-{args.shards}x{args.per_shard}"
    if "sensor" in parts:
        report["sensor"] = plane.sensor_part(folder, args.shards)
    if "cluster" in parts:
        report["cluster"] = plane.cluster_part(folder, args.shards, root, args.workers)
    if "loaders" in parts:
        if not (root / "catalog").exists():
            parser.error(f"no warehouse at {root}: run the cluster part first")
        report["loaders"] = loaders.loaders_part(root.resolve(), args.seconds, args.rss_seconds)
    if "bucket" in parts:
        report["bucket"] = loaders.bucket_part(folder.resolve(), args.bucket_ranges, args.seconds)
    print(json.dumps(report, indent=1))
    save_report("droid_scale", report)


if __name__ == "__main__":
    main()
