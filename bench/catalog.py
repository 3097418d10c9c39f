"""Benchmark: the catalog at 1,000,000 episodes in 300 partitions.

Ours: per-partition Parquet files behind DuckDB views (readers never wait for writers).
Baseline, same rows, same run: one native DuckDB table (the single-writer design), where a
partition refresh is DELETE + INSERT. Reported: time to add/replace one partition as the
catalog grows (10, 100, 300 partitions) and median latency of typical queries.

    python -m bench.catalog [--episodes 1000000] [--partitions 300]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa

from bench.measure import median_ms, save_report, scaled
from episode_warehouse.catalog import EPISODES, CatalogStore
from episode_warehouse.storage.local import LocalRoot
from warehouse_fixtures.openx_writer import INSTRUCTIONS

QUERIES = {
    "filter_aggregate": 'SELECT partition, count(*), avg("return") FROM episodes '
    "WHERE length > 500 AND complete GROUP BY 1",
    "top_k_return": 'SELECT source, partition, episode, "return" FROM episodes '
    'ORDER BY "return" DESC LIMIT 100',
    "instruction_search": "SELECT partition, episode FROM episodes "
    "WHERE language_instruction ILIKE '%drawer%'",
    "count": "SELECT count(*) FROM episodes",
}


_SET_COLUMNS = {
    "source", "partition", "episode", "start", "length", "return", "terminated", "truncated",
    "true_start", "complete", "language_instruction", "source_files", "source_version",
    "code_version", "run_id", "materialized_at",
}  # fmt: skip


def partition_rows(i: int, n: int, rng: np.random.Generator) -> tuple[str, str, pa.Table, dict]:
    source = "atari" if i % 2 == 0 else "openx"
    key = f"Game{i // 10}/{i % 10 + 1}" if source == "atari" else f"dataset_{i}"
    length = rng.integers(50, 2000, n)
    start = np.concatenate([[0], np.cumsum(length)[:-1]])
    terminated = rng.random(n) < 0.9
    now = datetime.now(UTC)
    table = pa.table(
        {
            "source": [source] * n,
            "partition": [key] * n,
            "episode": np.arange(n),
            "start": start,
            "length": length,
            "return": rng.normal(0, 10, n),
            "terminated": terminated,
            "truncated": ~terminated,
            "true_start": np.ones(n, bool),
            "complete": terminated,
            "language_instruction": (
                [None] * n
                if source == "atari"
                else [INSTRUCTIONS[j % len(INSTRUCTIONS)] for j in range(n)]
            ),
            "source_files": [[f"{key}/file_{j // 100}"] for j in range(n)],
            "source_version": ["v1"] * n,
            "code_version": ["ted=1,rows=1"] * n,
            "run_id": ["r"] * n,
            "materialized_at": [now] * n,
            # source-specific columns (RL Unplugged ids, LeRobot tasks and stats, RLDS split and
            # episode metadata): NULL here, every one the schema has that is not set above
            **{f.name: [None] * n for f in EPISODES.arrow_schema if f.name not in _SET_COLUMNS},
        },
        schema=EPISODES.arrow_schema,
    )
    part = {
        "source": source,
        "partition": key,
        "frames": int(length.sum()),
        "episodes": n,
        "bytes_on_disk": 0,
        "data_version": "d",
        "code_version": "c",
        "run_id": "r",
        "materialized_at": now,
        "source_url": "bench",
    }
    return source, key, table, part


def native_replace(con, source: str, key: str, table: pa.Table) -> None:
    """The single-table design's partition refresh: DELETE + INSERT in one transaction."""
    con.register("incoming", table)
    con.execute("BEGIN")
    con.execute("DELETE FROM episodes WHERE source = ? AND partition = ?", [source, key])
    con.execute("INSERT INTO episodes SELECT * FROM incoming")
    con.execute("COMMIT")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=scaled(1_000_000, 2000))
    parser.add_argument("--partitions", type=int, default=scaled(300, 4))
    args = parser.parse_args()
    per = args.episodes // args.partitions
    rng = np.random.default_rng(0)
    report: dict = {"episodes": per * args.partitions, "partitions": args.partitions}
    with tempfile.TemporaryDirectory() as tmp:
        store = CatalogStore(LocalRoot(Path(tmp)))
        native = duckdb.connect(str(Path(tmp) / "native.duckdb"))
        first = True
        refresh = {}
        for i in range(args.partitions):
            source, key, table, part = partition_rows(i, per, rng)
            t = time.perf_counter()
            store.publish_partition(source, key, table, part, {"bench": i})
            ours_s = time.perf_counter() - t
            t = time.perf_counter()
            if first:
                native.register("incoming", table)
                native.execute("CREATE TABLE episodes AS SELECT * FROM incoming")
                first = False
            else:
                native_replace(native, source, key, table)
            native_s = time.perf_counter() - t
            if i + 1 in (10, 100, args.partitions):
                # replace one existing partition at this catalog size, both designs
                source, key, table, part = partition_rows(0, per, rng)
                t = time.perf_counter()
                store.publish_partition(source, key, table, part, {"bench": -i})
                ours_replace = time.perf_counter() - t
                t = time.perf_counter()
                native_replace(native, source, key, table)
                refresh[i + 1] = {
                    "ours_add_ms": round(ours_s * 1000, 1),
                    "ours_replace_ms": round(ours_replace * 1000, 1),
                    "native_add_ms": round(native_s * 1000, 1),
                    "native_replace_ms": round((time.perf_counter() - t) * 1000, 1),
                }
        native.close()
        report["partition_refresh_by_catalog_size"] = refresh
        ours = duckdb.connect(str(store.db_path), read_only=True)
        base = duckdb.connect(str(Path(tmp) / "native.duckdb"), read_only=True)
        report["rows_visible"] = ours.execute("SELECT count(*) FROM episodes").fetchone()[0]
        latency = {}
        for name, sql in QUERIES.items():
            a = median_ms(lambda sql=sql: ours.execute(sql).fetchall())
            b = median_ms(lambda sql=sql: base.execute(sql).fetchall())
            latency[name] = {"ours_ms": a, "native_table_ms": b, "ratio": round(a / b, 2)}
        report["query_latency"] = latency
    print(json.dumps(report, indent=1))
    save_report("catalog", report)


if __name__ == "__main__":
    main()
