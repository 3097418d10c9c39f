"""The local cluster with real components: PostgreSQL, Redis, the Dagster webserver and daemon,
and two Celery workers, each its own process. Backfills run there; the results are checked
against a single-process build, and against the run and step timestamps Dagster recorded."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import pytest

from episode_warehouse.catalog import run_query
from episode_warehouse.storage.local import LocalRoot
from resources.worker import WORKER_TAG
from warehouse_cli import processes
from warehouse_cli.cluster import backfill, credentials, services
from warehouse_cli.runner import materialize_partition, stage_assets
from warehouse_fixtures.demo import DEMO_BUCKET

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("cluster")]  # one cluster at a time


@dataclass
class Cluster:
    folder: Path
    root: Path
    state: dict
    instance: dg.DagsterInstance
    env: dict

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
        instance = services.open_instance(folder)
        yield Cluster(folder, root, state, instance, env)
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
    files = sorted(
        p.relative_to(theirs) for p in theirs.rglob("*") if p.suffix in (".npy", ".frames")
    )
    files.append(Path("episodes.parquet"))
    assert any(f.suffix == ".frames" for f in files)  # the cameras, stored encoded
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
    # (whether the openx run overlapped an atari one is the machine's speed, not a property:
    # on a loaded machine the first atari run ended before the queue started the openx run)
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
    _, rows = run_query(LocalRoot(cluster.root), "SELECT source, partition FROM partitions")
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


def _started_on(cluster: Cluster, backfill_id: str, step: str, timeout: float = 480) -> str:
    """Wait until the backfill's run is executing ``step``; returns the run's worker. The bound
    only ends a stuck wait: a run passes the daemon's queue, then its raw stage (one full slow
    tier timed out at 240 s here; the module alone takes 3.5 minutes in all)."""
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
    raise AssertionError(
        f"no run of {backfill_id} reached {step}\n" + _diagnosis(cluster, backfill_id)
    )


def _backfill_status(cluster: Cluster, backfill_id: str) -> list[str]:
    """The backfill's status, and the error the daemon failed it with (once seen: FAILED within
    a minute of a restarted daemon, no run made, the reason past the daemon log's tail)."""
    record = cluster.instance.get_backfill(backfill_id)
    if record is None:
        return [f"backfill {backfill_id}: not found"]
    error = record.error.to_string().splitlines() if record.error is not None else []
    return [f"backfill {backfill_id} {record.status}", *(f"    {line[:200]}" for line in error)]


def _diagnosis(cluster: Cluster, backfill_id: str) -> str:
    """What a stuck wait shows: the backfill's runs (status, worker, last events) and the tail
    of each service's log, so that a failure on CI says where the run stopped."""
    lines = _backfill_status(cluster, backfill_id)
    for record in cluster.runs(backfill_id):
        run = record.dagster_run
        events = cluster.instance.all_logs(run.run_id)[-5:]
        lines.append(f"run {run.run_id[:8]} {run.status} worker={run.tags.get(WORKER_TAG)!r}")
        lines += [f"    {e.dagster_event_type or ''} {e.step_key or ''} {e.user_message[:160]}"
                  for e in events]  # fmt: skip
    for log in sorted((cluster.folder / "logs").glob("*.log")):
        text = log.read_text(errors="replace").splitlines()
        tail = [line for line in text[:-8] if backfill_id in line or "Error" in line][-12:]
        tail += text[-8:]
        lines += [f"--- {log.name}", *(f"    {line[:200]}" for line in tail)]
    return "\n".join(lines or ["no run was made"])


def _postgres(cluster: Cluster):
    from warehouse_cli.cluster.postgres import Postgres

    port = int(cluster.state["postgres"].rsplit(":", 1)[1].split("/")[0])
    password = credentials.load(cluster.folder).postgres
    return Postgres(cluster.folder / "postgres", port, password)


def test_every_service_asks_for_the_generated_password(cluster):
    """Any local user reaches 127.0.0.1: PostgreSQL (TCP and socket) and Redis refuse a client
    without the password, the secrets are 0600 in a 0700 folder, and the password is on no
    command line and in no config file but the 0600 ones."""
    import redis

    secrets = credentials.load(cluster.folder)
    folder = cluster.folder / "secrets"
    assert folder.stat().st_mode & 0o777 == 0o700
    for path in folder.iterdir():
        assert path.stat().st_mode & 0o777 == 0o600, path
    postgres = _postgres(cluster)
    assert postgres.answers()
    for host in ("127.0.0.1", str(postgres.sockets)):
        for password in ("", "wrong"):
            done = subprocess.run(
                [*postgres._as_owner(), str(postgres.bin / "psql"), "-h", host, "-p",
                 str(postgres.port), "-U", "dagster", "-d", "dagster", "-w", "-tAc", "SELECT 1"],
                capture_output=True, text=True, env={**os.environ, "PGPASSWORD": password},
                check=False,
            )  # fmt: skip
            assert done.returncode != 0, (host, password)
            assert "password" in done.stderr, done.stderr
    port = int(cluster.state["redis"].rsplit(":", 1)[1])
    with pytest.raises(redis.AuthenticationError):
        redis.Redis(host="127.0.0.1", port=port, socket_timeout=2).ping()
    assert redis.Redis(host="127.0.0.1", port=port, password=secrets.redis).ping()
    daemon = Path(f"/proc/{cluster.state['services']['daemon']}/environ").read_bytes()
    assert b"DAGSTER_BACKFILL_RETRY_DEFINITION_CHANGED_ERROR=1\0" in daemon  # instance.py
    for pid in services.status(cluster.folder)["pids"]:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except FileNotFoundError:  # a short-lived child that has ended
            continue
        assert secrets.postgres.encode() not in cmdline and secrets.redis.encode() not in cmdline
    for text in (
        (cluster.folder / "dagster_home" / "dagster.yaml").read_text(),
        json.dumps(cluster.state),
    ):
        assert secrets.postgres not in text and secrets.redis not in text


def test_a_postgres_restart_mid_backfill_does_not_stop_it(cluster):
    keys = ["Pong/1", "Pong/5"]
    backfill_id = cluster.backfill("atari", keys)
    _started_on(cluster, backfill_id, "atari_replay_files")
    postgres = _postgres(cluster)
    postgres.stop()
    time.sleep(2)
    postgres.start()
    outcomes = cluster.wait(backfill_id, keys)
    assert [o.status for o in outcomes] == ["SUCCESS", "SUCCESS"], _story(cluster, backfill_id)


def _story(cluster: Cluster, backfill_id: str) -> str:
    """What a failed run of ``backfill_id`` recorded: its failure tags and every event that
    carries an error, with the last frames of its stack (to tell which process lost what)."""
    lines = _backfill_status(cluster, backfill_id)
    for record in cluster.runs(backfill_id):
        run = record.dagster_run
        tags = {k: v for k, v in run.tags.items() if "retry" in k or "failure" in k}
        lines.append(f"run {run.run_id[:8]} {run.status.value} {tags}")
        for entry in cluster.instance.all_logs(run.run_id):
            event = entry.dagster_event
            data = getattr(event, "event_specific_data", None)
            error = getattr(data, "error", None) or getattr(entry, "error_info", None)
            if event is not None and (error is not None or "FAILURE" in event.event_type_value):
                lines.append(f"  {event.event_type_value} {event.step_key}: {event.message}")
                if error is not None:
                    frames = [f for f in error.stack if "sqlalchemy" not in f]
                    lines.append("    " + "".join(frames[-8:]).replace("\n", "\n    "))
                    lines.append(f"    {error.message.strip()[:300]}")
    return "\n".join(lines)


def test_status_tells_which_services_answer_and_up_restarts_the_missing(cluster, tmp_path):
    """A killed worker and a stopped PostgreSQL show as not answering; ``backfill --wait``
    without a database ends in one line and writes nothing; ``up`` brings back only what is
    missing."""
    before = services.health(cluster.folder)
    assert all(before.values()), before
    pid = cluster.state["services"]["worker-2"]
    for p in {pid, *processes.descendants(pid)}:
        os.kill(p, signal.SIGKILL)
    _postgres(cluster).stop()
    # as a killed server would, leave a pid file naming a process that is gone
    gone = subprocess.Popen(["true"])
    gone.wait()
    (cluster.folder / "postgres" / "data" / "postmaster.pid").write_text(f"{gone.pid}\n")
    after = services.health(cluster.folder)
    assert not after["worker-2"] and not after["postgres"] and not after["daemon"], after
    assert after["worker-1"] and after["redis"] and after["webserver"], after

    cli = [sys.executable, "-m", "warehouse_cli.main"]
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "home")}
    shown = subprocess.run(
        [*cli, "cluster", "status", "--dir", str(cluster.folder)],
        capture_output=True, text=True, env=env, cwd=tmp_path, check=False,
    )  # fmt: skip
    assert shown.returncode == 1
    lines = {line.split()[0]: line for line in shown.stdout.splitlines() if line}
    assert "NOT ANSWERING" in lines["worker-2"] and "NOT ANSWERING" in lines["postgres"]
    assert "answers" in lines["worker-1"] and "answers" in lines["redis"]
    followed = subprocess.run(
        [*cli, "backfill", "atari", "Pong/1", "--wait", "--dir", str(cluster.folder)],
        capture_output=True, text=True, env=env, cwd=tmp_path, check=False, timeout=300,
    )  # fmt: skip
    assert followed.returncode == 2, followed.stdout + followed.stderr
    assert followed.stderr.strip().count("\n") == 0, followed.stderr  # one line
    assert "lost the cluster's database" in followed.stderr
    assert "warehouse cluster up" in followed.stderr
    assert list(tmp_path.iterdir()) == [], list(tmp_path.iterdir())  # no traceback file

    kept = {name: cluster.state["services"][name] for name in ("redis", "webserver", "worker-1")}
    state = services.up(cluster.folder, workers=2, env=cluster.env)
    assert all(services.health(cluster.folder).values())
    assert {name: state["services"][name] for name in kept} == kept  # left running
    assert state["services"]["worker-2"] != pid
    cluster.state = state


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
