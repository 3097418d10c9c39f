"""The local cluster with real components: PostgreSQL, Redis, the Dagster webserver and daemon,
and two Celery workers, each its own process. Backfills run there; the results are checked
against a single-process build, and against the run and step timestamps Dagster recorded."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import pytest

from episode_warehouse.catalog import run_query
from episode_warehouse.fixtures.demo import DEMO_BUCKET
from warehouse_cli import processes
from warehouse_cli.cluster import backfill, services
from warehouse_cli.cluster.instance import WORKER_TAG
from warehouse_cli.runner import materialize_partition, stage_assets

pytestmark = pytest.mark.slow


@dataclass
class Cluster:
    folder: Path
    root: Path
    state: dict
    instance: dg.DagsterInstance

    def backfill(self, source: str, partitions: list[str]) -> str:
        assets = stage_assets(source, None)
        return backfill.submit(self.instance, self.state["webserver"], source, partitions, assets)

    def wait(self, backfill_id: str, partitions: list[str]) -> list:
        return backfill.wait(self.instance, backfill_id, partitions, lambda _: None, 1.0, 600)

    def runs(self, backfill_id: str) -> list:
        return self.instance.get_run_records(dg.RunsFilter(tags={"dagster/backfill": backfill_id}))


@pytest.fixture(scope="module")
def cluster(demo_fixtures, gcs_endpoint, tmp_path_factory):
    folder = Path(tempfile.mkdtemp(prefix="warehouse-cluster-"))
    root = tmp_path_factory.mktemp("cluster-root")
    env = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "ATARI_CHECKPOINTS")}
    env |= {
        "EPISODE_WAREHOUSE_ROOT": str(root),
        "ATARI_REPLAY_URL": f"gs://{DEMO_BUCKET}/dqn",
        "OPENX_URL": str(demo_fixtures / "openx"),
        "STORAGE_EMULATOR_HOST": gcs_endpoint,
    }
    env.pop("OPENX_MODE", None)
    try:
        state = services.up(folder, workers=2, source_limits={"atari": 1}, env=env)
        instance = dg.DagsterInstance.from_config(str(folder / "dagster_home"))
        yield Cluster(folder, root, state, instance)
    finally:
        services.down(folder, drain_s=5)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def reference(demo_fixtures, gcs_endpoint, tmp_path_factory):
    """The single-process build (`materialize`) of the partitions the cluster builds."""
    root = tmp_path_factory.mktemp("reference-root")
    keep = dict(os.environ)
    os.environ.update(
        EPISODE_WAREHOUSE_ROOT=str(root),
        ATARI_REPLAY_URL=f"gs://{DEMO_BUCKET}/dqn",
        OPENX_URL=str(demo_fixtures / "openx"),
        STORAGE_EMULATOR_HOST=gcs_endpoint,
    )
    try:
        with dg.instance_for_test() as instance:
            for source, key in (("atari", "Pong/1"), ("atari", "Pong/5"), ("openx", "bridge")):
                materialize_partition(source, key, "ted", instance=instance)
            materialize_partition("atari", "Breakout/2", "ted", instance=instance)
    finally:
        os.environ.clear()
        os.environ.update(keep)
    return root


def _assert_same_ted(root: Path, reference: Path, source: str, key: str) -> None:
    ours, theirs = root / "ted" / source / key, reference / "ted" / source / key
    files = sorted(p.relative_to(theirs) for p in theirs.rglob("*.npy"))
    files.append(Path("episodes.parquet"))
    assert len(files) > 3
    for name in files:
        assert (ours / name).read_bytes() == (theirs / name).read_bytes(), (key, name)


def _interval(record) -> tuple[float, float]:
    return record.start_time, record.end_time


def _overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def _step_intervals(instance, run_id: str, suffix: str) -> list[tuple[float, float]]:
    records = instance.get_records_for_run(
        run_id, of_type={dg.DagsterEventType.STEP_START, dg.DagsterEventType.STEP_SUCCESS}
    ).records
    times: dict[str, list[float]] = {}
    for r in records:
        step = r.event_log_entry.step_key or ""
        if step.endswith(suffix):
            times.setdefault(step, []).append(r.event_log_entry.timestamp)
    return [(min(t), max(t)) for t in times.values()]


def test_a_backfill_spreads_over_both_workers_within_the_limits(cluster, reference):
    atari = cluster.backfill("atari", ["Pong/1", "Pong/5"])
    openx = cluster.backfill("openx", ["bridge"])
    outcomes = cluster.wait(atari, ["Pong/1", "Pong/5"]) + cluster.wait(openx, ["bridge"])
    assert [o.status for o in outcomes] == ["SUCCESS"] * 3, outcomes

    atari_runs, openx_runs = cluster.runs(atari), cluster.runs(openx)
    everything = atari_runs + openx_runs
    assert {r.dagster_run.tags[WORKER_TAG] for r in everything} == set(cluster.state["workers"])
    a, b = (_interval(r) for r in atari_runs)
    assert not _overlap(a, b)  # --limit atari=1 held
    assert any(_overlap(_interval(openx_runs[0]), x) for x in (a, b))  # and runs overlapped
    catalog_steps = [
        s
        for r in everything
        for s in _step_intervals(cluster.instance, r.dagster_run.run_id, "_catalog_rows")
    ]
    assert len(catalog_steps) == 3
    for i, x in enumerate(catalog_steps):  # the catalog_writer pool (limit 1) held
        assert not any(_overlap(x, y) for y in catalog_steps[i + 1 :])

    for source, key in (("atari", "Pong/1"), ("atari", "Pong/5"), ("openx", "bridge")):
        _assert_same_ted(cluster.root, reference, source, key)
    _, rows = run_query(cluster.root / "catalog", "SELECT source, partition FROM partitions")
    assert {("atari", "Pong/1"), ("atari", "Pong/5"), ("openx", "bridge")} <= set(rows)


def test_the_same_partition_requested_twice_at_once_is_built_once(cluster):
    first = cluster.backfill("openx", ["cmu_stretch"])
    second = cluster.backfill("openx", ["cmu_stretch"])
    outcomes = cluster.wait(first, ["cmu_stretch"]) + cluster.wait(second, ["cmu_stretch"])
    assert [o.status for o in outcomes] == ["SUCCESS", "SUCCESS"]
    (x,), (y,) = cluster.runs(first), cluster.runs(second)
    assert not _overlap(_interval(x), _interval(y))  # one run per partition at a time
    rebuilt = []
    for record in (x, y):
        for event in cluster.instance.get_records_for_run(
            record.dagster_run.run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION
        ).records:
            materialization = event.asset_materialization
            if materialization.asset_key == dg.AssetKey("openx_ted"):
                rebuilt.append(materialization.metadata["rebuilt"].value)
    assert sorted(rebuilt) == [False, True]


def _started_on(cluster: Cluster, backfill_id: str, step: str, timeout: float = 240) -> str:
    """Wait until the backfill's run is executing ``step``; returns the run's worker."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for record in cluster.runs(backfill_id):
            run = record.dagster_run
            if run.tags.get(WORKER_TAG) and any(
                r.event_log_entry.step_key == step
                for r in cluster.instance.get_records_for_run(
                    run.run_id, of_type=dg.DagsterEventType.STEP_START
                ).records
            ):
                return run.tags[WORKER_TAG]
        time.sleep(0.3)
    raise AssertionError(f"no run of {backfill_id} reached {step}")


def test_a_postgres_restart_mid_backfill_does_not_stop_it(cluster):
    from warehouse_cli.cluster.postgres import Postgres

    keys = ["Pong/1", "Pong/5"]
    backfill_id = cluster.backfill("atari", keys)
    _started_on(cluster, backfill_id, "atari_replay_files")
    port = int(cluster.state["postgres"].rsplit(":", 1)[1].split("/")[0])
    postgres = Postgres(cluster.folder / "postgres", port)
    postgres.stop()
    time.sleep(2)
    postgres.start()
    outcomes = cluster.wait(backfill_id, keys)
    assert [o.status for o in outcomes] == ["SUCCESS", "SUCCESS"], outcomes


def test_a_killed_worker_run_is_retried_on_the_other_worker(cluster, reference):
    backfill_id = cluster.backfill("atari", ["Breakout/2"])
    worker = _started_on(cluster, backfill_id, "atari_episodes")
    name = worker.split("@")[0]
    pid = cluster.state["services"][name]
    for p in {pid, *processes.descendants(pid)}:
        os.kill(p, signal.SIGKILL)  # the worker and the run it was executing
    (outcome,) = cluster.wait(backfill_id, ["Breakout/2"])
    assert outcome.status == "SUCCESS" and outcome.runs == 2, outcome
    runs = sorted(cluster.runs(backfill_id), key=lambda r: r.create_timestamp)
    assert runs[0].dagster_run.status == dg.DagsterRunStatus.FAILURE  # failed by monitoring
    assert runs[1].dagster_run.tags[WORKER_TAG] not in ("", worker)
    _assert_same_ted(cluster.root, reference, "atari", "Breakout/2")
    assert not list(cluster.root.rglob(".staging-*"))  # nothing half-written left


def test_cluster_down_leaves_no_process(cluster):
    started = cluster.state["pids"]
    state = services.down(cluster.folder, drain_s=5)
    assert state["pids"] == [] and not state["running"]
    assert not [p for p in started if processes.alive(p)]
    assert services.status(cluster.folder)["pids"] == []
