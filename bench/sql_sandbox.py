"""Benchmark: what the SQL sandbox's child process costs a query.

Ours: ``run_query`` (a fresh interpreter per query with a hard memory bound, killed at the
timeout). Baseline, same catalog, same queries, same run: the same sandboxed DuckDB connection
opened in the calling process (the design before issue #26), connection set-up included.

    python -m bench.sql_sandbox [--episodes 100000] [--partitions 30] [--repeats 7]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import duckdb
import numpy as np

from bench.catalog import QUERIES, partition_rows
from bench.measure import median_ms, save_report, scaled
from episode_warehouse.catalog import CatalogStore
from episode_warehouse.catalog.query import run_query
from episode_warehouse.storage.local import LocalRoot


def _in_process(root: LocalRoot, sql: str) -> list:
    store = CatalogStore(root)
    con = duckdb.connect(":memory:")
    con.execute("SET allowed_directories = [?]", [store.url + "/"])
    for statement in store.view_statements():
        con.execute(statement)
    con.execute("SET enable_external_access = false")
    con.execute("SET memory_limit = '2GB'")
    con.execute("SET lock_configuration = true")
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=scaled(100_000, 2000))
    parser.add_argument("--partitions", type=int, default=scaled(30, 3))
    parser.add_argument("--repeats", type=int, default=scaled(7, 1))
    args = parser.parse_args()
    per = args.episodes // args.partitions
    rng = np.random.default_rng(0)
    report: dict = {"episodes": per * args.partitions, "partitions": args.partitions}
    with tempfile.TemporaryDirectory() as tmp:
        folder = LocalRoot(Path(tmp).resolve())
        store = CatalogStore(folder)
        for i in range(args.partitions):
            source, key, table, part = partition_rows(i, per, rng)
            store.publish_partition(source, key, table, part, {"bench": i})
        latency = {}
        for name, sql in QUERIES.items():
            ours = median_ms(lambda sql=sql: run_query(folder, sql), args.repeats)
            base = median_ms(lambda sql=sql: _in_process(folder, sql), args.repeats)
            if sorted(run_query(folder, sql)[1], key=repr) != sorted(
                _in_process(folder, sql), key=repr
            ):
                raise SystemExit(f"{name}: the sandboxed answer differs from the in-process one")
            latency[name] = {
                "sandboxed_child_ms": ours,
                "in_process_ms": base,
                "ratio": round(ours / base, 2),
                "added_ms": round(ours - base, 1),
            }
        report["query_latency"] = latency
    print(json.dumps(report, indent=1))
    save_report("sql_sandbox", report)


if __name__ == "__main__":
    main()
