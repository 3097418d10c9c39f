"""The local cluster with a gs:// root: its workers share nothing but the bucket.

Two Celery workers (each with its own scratch folder) build Atari and OpenX partitions into a
bucket on the GCS emulator; the TEDs in the bucket equal a single-process local build, the
catalog queried over the bucket lists them, and each worker's scratch holds only what its own
runs built.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import dagster as dg
import numpy as np
import pytest

from episode_warehouse import open_ted
from episode_warehouse.catalog import run_query
from episode_warehouse.gcs import gcs_client
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.ted import open_ted_folder
from resources.worker import WORKER_TAG
from warehouse_cli.cluster import backfill, services
from warehouse_cli.runner import materialize_partition, stage_assets
from warehouse_fixtures.demo import DEMO_BUCKET

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("cluster")]  # one cluster at a time
PARTITIONS = {"atari": ["Pong/1", "Pong/5"], "openx": ["bridge"]}


def test_workers_share_only_the_bucket(demo_fixtures, gcs_endpoint, tmp_path, monkeypatch):
    gcs_client(gcs_endpoint).create_bucket("cluster-warehouse")
    url = "gs://cluster-warehouse/wh"
    sources = {
        "ATARI_REPLAY_URL": f"gs://{DEMO_BUCKET}/dqn",
        "OPENX_URL": str(demo_fixtures / "openx"),
        "STORAGE_EMULATOR_HOST": gcs_endpoint,
    }
    env = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "ATARI_CHECKPOINTS")}
    env |= {**sources, "EPISODE_WAREHOUSE_ROOT": url}
    env.pop("OPENX_MODE", None)
    folder = Path(tempfile.mkdtemp(prefix="warehouse-bucket-cluster-"))
    try:
        state = services.up(folder, workers=2, env=env)
        instance = services.open_instance(folder)
        ids = {
            s: backfill.submit(instance, state["webserver"], s, keys, stage_assets(s, "catalog"))
            for s, keys in PARTITIONS.items()
        }
        outcomes = [
            o
            for s, keys in PARTITIONS.items()
            for o in backfill.wait(instance, ids[s], keys, lambda _: None, 1.0, 600)
        ]
        assert [o.status for o in outcomes] == ["SUCCESS"] * 3, outcomes
        runs = [
            r
            for i in ids.values()
            for r in instance.get_run_records(dg.RunsFilter(tags={"dagster/backfill": i}))
        ]
    finally:
        services.down(folder, drain_s=5)
    try:
        _check(folder, url, runs, sources, tmp_path, monkeypatch)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _check(folder, url, runs, sources, tmp_path, monkeypatch) -> None:
    assert not Path("gs:").exists()
    # each worker's scratch holds the partitions its runs built, and no other
    built_on: dict[str, set] = {}
    for record in runs:
        run = record.dagster_run
        worker = run.tags[WORKER_TAG].split("@")[0]
        built_on.setdefault(worker, set()).add(
            (run.tags["warehouse/source"], run.tags["dagster/partition"])
        )
    for worker in ("worker-1", "worker-2"):
        scratch = next((folder / "workers" / worker).glob("cluster-warehouse-*"), None)
        teds = set()
        if scratch is not None:
            teds = {
                (p.parent.relative_to(scratch / "ted").parts[0],
                 "/".join(p.parent.relative_to(scratch / "ted").parts[1:]))
                for p in (scratch / "ted").rglob("meta.json")
            }  # fmt: skip
        assert teds == built_on.get(worker, set()), worker
    assert len(built_on) == 2  # both workers ran something

    # the bucket's TEDs equal a single-process build into a local folder
    for key, value in sources.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("EPISODE_WAREHOUSE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("EPISODE_WAREHOUSE_LOCAL_COPY", str(tmp_path / "reader-scratch"))
    local = tmp_path / "reference"
    with dg.instance_for_test() as instance:
        for source, keys in PARTITIONS.items():
            for key in keys:
                materialize_partition(source, key, "ted", instance=instance,
                                      resources={"warehouse": {"root": str(local)}})  # fmt: skip
                ours = open_ted(source, key, root=url)
                theirs = open_ted_folder(WarehouseLayout.local(local).ted_dir(source, key))
                for k in theirs.keys(True, True):
                    np.testing.assert_array_equal(ours.get(k)[:], theirs.get(k)[:], str(k))
    _, rows = run_query(
        WarehouseLayout.from_root(url).root,
        "SELECT source, partition FROM partitions ORDER BY ALL",
    )
    assert rows == [("atari", "Pong/1"), ("atari", "Pong/5"), ("openx", "bridge")]
