"""``warehouse cluster up | status | down``: every service of a local cluster as its own process.

Layout of the cluster folder (default ``./.cluster``)::

    config.json         ports and limits, kept so that `up` again reuses the same data
    cluster.json        what is running: addresses, pids, logs (removed by `down`)
    postgres/           data folder, sockets, postgres.log
    dagster_home/       dagster.yaml (Postgres, queue, Celery launcher), worker.yaml
    logs/               redis.log, webserver.log, daemon.log, worker-<n>.log
    workers/<name>/     each worker's own scratch space (EPISODE_WAREHOUSE_SCRATCH, TMPDIR)
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
import sys
import time
import urllib.request
from dataclasses import asdict
from pathlib import Path

from episode_warehouse.errors import ConfigError
from episode_warehouse.paths import DEFAULT_ROOT, ROOT_ENV
from warehouse_cli import processes
from warehouse_cli.cluster.instance import (
    POOL_LIMITS,
    QUEUE,
    WORKER_ENV,
    ClusterConfig,
    celery_config,
    dagster_yaml,
)
from warehouse_cli.cluster.postgres import Postgres
from warehouse_cli.cluster.system import ensure_installed
from warehouse_cli.environment import PROJECT_ROOT

log = logging.getLogger(__name__)
DEFAULT_DIR = Path(".cluster")
READY_TIMEOUT_S = 240.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _bin(name: str) -> str:
    return str(Path(sys.executable).parent / name)


def _config(folder: Path, source_limits: dict[str, int], workers: int) -> ClusterConfig:
    saved = folder / "config.json"
    if saved.exists():
        old = json.loads(saved.read_text())
        ports = {"postgres_port": old["postgres_port"], "redis_port": old["redis_port"]}
    else:
        ports = {"postgres_port": free_port(), "redis_port": free_port()}
    config = ClusterConfig(**ports, max_runs=workers, source_limits=source_limits)
    saved.write_text(json.dumps(asdict(config), indent=1))
    return config


def _environment(base: dict[str, str], home: Path) -> dict[str, str]:
    """The environment of `cluster up`, with the cluster's instance and an absolute root."""
    env = dict(base)
    env["DAGSTER_HOME"] = str(home)
    root = env.get(ROOT_ENV) or DEFAULT_ROOT
    if not root.startswith("gs://"):  # a bucket root stays a URL: workers share only the bucket
        env[ROOT_ENV] = str(Path(root).expanduser().resolve())
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def _start(name: str, cmd: list[str], env: dict, logs: Path) -> int:
    with (logs / f"{name}.log").open("ab") as out:
        return processes.start(cmd, env=env, cwd=PROJECT_ROOT, log=out).pid


def _wait(what: str, ready, log_file: Path, timeout: float = READY_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():
            return
        time.sleep(0.5)
    raise ConfigError(
        f"{what} did not answer within {timeout:.0f} s",
        subject=str(log_file),
        fix=f"read {log_file}; `warehouse cluster down` stops what did start",
    )


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def _redis_ok(port: int) -> bool:
    import redis

    try:
        return bool(redis.Redis(host="127.0.0.1", port=port, socket_timeout=1).ping())
    except redis.RedisError:
        return False


def celery_app(config: ClusterConfig):
    from celery import Celery

    return Celery(broker=config.broker, backend=config.backend)


def answering_workers(config: ClusterConfig, timeout: float = 2.0) -> set[str]:
    """Names of the workers that answer Celery's ping over the broker."""
    replies = celery_app(config).control.ping(timeout=timeout)
    return {name for reply in replies for name in reply}


def _daemon_ok(instance) -> bool:
    beats = instance.get_daemon_heartbeats()
    return all(d in beats for d in ("QUEUED_RUN_COORDINATOR", "MONITORING", "BACKFILL"))


def _prepare_instance(home: Path, config: ClusterConfig):
    """Write dagster.yaml, create Dagster's tables (once, before any service races to), and
    set the pools' limits."""
    import dagster as dg

    home.mkdir(parents=True, exist_ok=True)
    (home / "dagster.yaml").write_text(dagster_yaml(config))
    (home / "celery").mkdir(exist_ok=True)
    (home / "celery" / "dagster_celery_config.py").write_text(celery_config(config))
    instance = dg.DagsterInstance.from_config(str(home))
    for pool, limit in POOL_LIMITS.items():
        instance.event_log_storage.set_concurrency_slots(pool, limit)
    return instance


def up(
    folder: Path,
    workers: int = 2,
    source_limits: dict[str, int] | None = None,
    env: dict[str, str] | None = None,
) -> dict:
    """Start the cluster in ``folder`` and return its status once every service answers.
    Every service gets ``env`` (default: this process's environment), so the workers read the
    same warehouse root and source URLs as the command that started them.

    Raises:
        ConfigError: it is already running, a program is missing, or a service did not start.
    """
    folder = folder.resolve()
    if (folder / "cluster.json").exists() and status(folder)["running"]:
        raise ConfigError(
            "a cluster is already running in this folder",
            subject=str(folder),
            fix="`warehouse cluster status` shows it; `warehouse cluster down` stops it",
        )
    ensure_installed()
    for sub in ("logs", "workers", "postgres"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    folder.chmod(0o711)  # the postgres user must enter it (to reach postgres/)
    logs, home = folder / "logs", folder / "dagster_home"
    config = _config(folder, dict(source_limits or {}), workers)
    state: dict = {"dir": str(folder), "services": {}, "workers": []}

    def record(name: str, pid: int) -> None:
        state["services"][name] = pid
        (folder / "cluster.json").write_text(json.dumps(state, indent=1))

    postgres = Postgres(folder / "postgres", config.postgres_port)
    record("postgres", postgres.start())
    state["postgres"] = config.postgres_url
    redis_cmd = ["redis-server", "--bind", "127.0.0.1", "--port", str(config.redis_port)]
    redis_cmd += ["--save", "", "--appendonly", "no"]
    record("redis", _start("redis", redis_cmd, dict(os.environ), logs))
    _wait("Redis", lambda: _redis_ok(config.redis_port), logs / "redis.log")
    state["redis"] = config.broker
    instance = _prepare_instance(home, config)
    env = _environment(dict(os.environ) if env is None else env, home)
    workspace = str(PROJECT_ROOT / "workspace.yaml")
    port = free_port()
    webserver = [_bin("dagster-webserver"), "-w", workspace, "-h", "127.0.0.1", "-p", str(port)]
    record("webserver", _start("webserver", webserver, env, logs))
    record("daemon", _start("daemon", [_bin("dagster-daemon"), "run", "-w", workspace], env, logs))
    host = socket.gethostname()
    for n in range(1, workers + 1):
        name = f"worker-{n}"
        scratch = folder / "workers" / name
        scratch.mkdir(exist_ok=True)
        worker_env = {
            **env,
            WORKER_ENV: f"{name}@{host}",
            "EPISODE_WAREHOUSE_SCRATCH": str(scratch),
            # the workers share this machine's cores
            "EPISODE_WAREHOUSE_WORKERS": env.get(
                "EPISODE_WAREHOUSE_WORKERS", str(max(1, (os.cpu_count() or 1) // workers))
            ),
            "TMPDIR": str(scratch),
        }
        worker_env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(home / "celery"), env.get("PYTHONPATH")) if p
        )
        cmd = [
            _bin("celery"),
            "-A",
            "warehouse_cli.cluster.celery_app",
            "worker",
            "-n",
            f"{name}@%h",
        ]
        cmd += ["-Q", QUEUE, "--concurrency=1", "--prefetch-multiplier=1", "--loglevel=INFO"]
        cmd += ["--without-gossip", "--without-mingle"]
        record(name, _start(name, cmd, worker_env, logs))
        state["workers"].append(f"{name}@{host}")
    state["webserver"] = f"http://127.0.0.1:{port}"
    (folder / "cluster.json").write_text(json.dumps(state, indent=1))
    _wait(
        "the webserver",
        lambda: _http_ok(f"{state['webserver']}/server_info"),
        logs / "webserver.log",
    )
    _wait("the daemon", lambda: _daemon_ok(instance), logs / "daemon.log")
    expected = set(state["workers"])
    _wait(
        f"{workers} worker(s)",
        lambda: expected <= answering_workers(config),
        logs / "worker-1.log",
    )
    return status(folder)


def _group(pgid: int) -> list[int]:
    """Live processes of the process group ``pgid`` (each service starts its own)."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(stat.parent.name))
    return members


def _alive_tree(pid: int) -> list[int]:
    """The service's process, its group and every descendant, alive."""
    tree = {pid, *_group(pid)}
    tree |= {d for p in list(tree) for d in processes.descendants(p)}
    return sorted(p for p in tree if processes.alive(p))


def status(folder: Path) -> dict:
    """Addresses, workers and the pids of every process the cluster started (with their
    children); ``running`` when any of them is alive."""
    folder = folder.resolve()
    path = folder / "cluster.json"
    if not path.exists():
        return {"dir": str(folder), "running": False, "pids": [], "workers": []}
    state = json.loads(path.read_text())
    pids = sorted({p for pid in state["services"].values() for p in _alive_tree(pid)})
    return {
        "dir": str(folder),
        "running": bool(pids),
        "webserver": state.get("webserver"),
        "postgres": state.get("postgres"),
        "redis": state.get("redis"),
        "workers": state.get("workers", []),
        "services": state["services"],
        "pids": pids,
        "logs": str(folder / "logs"),
    }


def _terminate(pid: int, timeout: float) -> None:
    tree = _alive_tree(pid)
    for p in tree:
        with contextlib.suppress(ProcessLookupError):
            os.kill(p, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(processes.alive(p) for p in tree):
        time.sleep(0.2)
    for p in {*tree, *_alive_tree(pid)}:  # and whatever started meanwhile
        with contextlib.suppress(ProcessLookupError):
            os.kill(p, signal.SIGKILL)


def down(folder: Path, drain_s: float = 30.0) -> dict:
    """Stop the cluster: workers first (each finishes its run within ``drain_s``, else it is
    stopped), then the daemon, the webserver, Redis and PostgreSQL. The data stays."""
    folder = folder.resolve()
    path = folder / "cluster.json"
    if not path.exists():
        return status(folder)
    state = json.loads(path.read_text())
    services = state["services"]
    workers = [n for n in services if n.startswith("worker-")]
    for name in workers:  # SIGTERM is Celery's warm shutdown: the current task finishes
        with contextlib.suppress(ProcessLookupError):
            os.kill(services[name], signal.SIGTERM)
    deadline = time.monotonic() + drain_s
    while time.monotonic() < deadline and any(processes.alive(services[n]) for n in workers):
        time.sleep(0.5)
    for name in workers:  # whatever did not drain in time
        _terminate(services[name], 5.0)
    for name in ("daemon", "webserver", "redis"):
        if name in services:
            _terminate(services[name], 15.0)
    if "postgres" in services:
        config = json.loads((folder / "config.json").read_text())
        Postgres(folder / "postgres", config["postgres_port"]).stop()
        _terminate(services["postgres"], 10.0)
    deadline = time.monotonic() + 10
    while (left := status(folder)["pids"]) and time.monotonic() < deadline:
        time.sleep(0.2)  # signalled processes exiting
    if not left:
        path.unlink()
    return status(folder) if left else {"dir": str(folder), "running": False, "pids": []}
