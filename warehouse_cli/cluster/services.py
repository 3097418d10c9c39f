"""``warehouse cluster up | status | down``: every service of a local cluster as its own process.

Layout of the cluster folder (default ``./.cluster``)::

    config.json         ports and limits, kept so that `up` again reuses the same data
    cluster.json        what is running: addresses, pids, logs (removed by `down`)
    secrets/            0700: postgres_password, redis_password, redis.conf (0600 each)
    postgres/           data folder, sockets, postgres.log
    dagster_home/       dagster.yaml (Postgres, queue, Celery launcher; no passwords)
    logs/               redis.log, webserver.log, daemon.log, worker-<n>.log
    workers/<name>/     each worker's own scratch space (EPISODE_WAREHOUSE_SCRATCH,
                        EPISODE_WAREHOUSE_LOCAL_COPY, TMPDIR)
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
from episode_warehouse.settings import DEFAULT_ROOT, ROOT_ENV, WORKER_ENV
from episode_warehouse.storage import root_setting
from warehouse_cli import processes
from warehouse_cli.cluster import credentials
from warehouse_cli.cluster.credentials import Credentials
from warehouse_cli.cluster.instance import (
    DAEMON_ENV,
    POOL_LIMITS,
    QUEUE,
    ClusterConfig,
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
    saved.write_text(json.dumps(asdict(config), indent=1, allow_nan=False))
    return config


def _environment(base: dict[str, str], home: Path) -> dict[str, str]:
    """The environment of `cluster up`, with the cluster's instance and an absolute root."""
    env = dict(base)
    env["DAGSTER_HOME"] = str(home)
    # a bucket root stays a URL (workers share only the bucket), a folder becomes absolute
    env[ROOT_ENV] = root_setting(env.get(ROOT_ENV) or DEFAULT_ROOT)
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


def _redis_ok(port: int, password: str) -> bool:
    import redis

    try:
        client = redis.Redis(host="127.0.0.1", port=port, password=password, socket_timeout=1)
        return bool(client.ping())
    except redis.RedisError:
        return False


def celery_app(config: ClusterConfig, secrets: Credentials):
    from celery import Celery

    env = secrets.environment(config.redis_port)
    return Celery(broker=env[credentials.BROKER_ENV], backend=env[credentials.BACKEND_ENV])


def answering_workers(config: ClusterConfig, secrets: Credentials, timeout: float = 2.0) -> set:
    """Names of the workers that answer Celery's ping over the broker."""
    replies = celery_app(config, secrets).control.ping(timeout=timeout)
    return {name for reply in replies for name in reply}


DAEMONS = ("QUEUED_RUN_COORDINATOR", "MONITORING", "BACKFILL")
HEARTBEAT_TOLERANCE_S = 60.0


def _daemon_ok(instance) -> bool:
    beats = instance.get_daemon_heartbeats()
    now = time.time()
    return all(d in beats and now - beats[d].timestamp < HEARTBEAT_TOLERANCE_S for d in DAEMONS)


def _prepare_instance(home: Path, config: ClusterConfig):
    """Write dagster.yaml, create Dagster's tables (once, before any service races to), and
    set the pools' limits. The caller has put the credentials in the environment."""
    import dagster as dg

    home.mkdir(parents=True, exist_ok=True)
    (home / "dagster.yaml").write_text(dagster_yaml(config))
    instance = dg.DagsterInstance.from_config(str(home))
    for pool, limit in POOL_LIMITS.items():
        instance.event_log_storage.set_concurrency_slots(pool, limit)
    return instance


def open_instance(folder: Path):
    """The Dagster instance of the cluster in ``folder``, for a client (``backfill``, tests):
    the cluster's credentials are put in this process's environment, where dagster.yaml
    reads them.

    Raises:
        ConfigError: the folder has no cluster or its secrets are unsafe.
    """
    import dagster as dg

    folder = folder.resolve()
    config = _saved_config(folder)
    os.environ.update(credentials.load(folder).environment(config.redis_port))
    return dg.DagsterInstance.from_config(str(folder / "dagster_home"))


def _saved_config(folder: Path) -> ClusterConfig:
    saved = folder / "config.json"
    if not saved.exists():
        raise ConfigError(
            "no cluster was started in this folder",
            subject=str(folder),
            fix=f"warehouse cluster up --dir {folder}",
        )
    return ClusterConfig(**json.loads(saved.read_text()))


def _redis_conf(config: ClusterConfig, secrets: Credentials, folder: Path) -> Path:
    """Redis's settings, password included, in a 0600 file (never on the command line)."""
    path = folder / credentials.FOLDER / "redis.conf"
    credentials.write_private(
        path,
        f"bind 127.0.0.1\nport {config.redis_port}\nrequirepass {secrets.redis}\n"
        'protected-mode yes\nsave ""\nappendonly no\n',
    )
    return path


def _alive(state: dict, name: str) -> bool:
    pid = state["services"].get(name)
    return bool(pid) and bool(_alive_tree(pid))


def up(
    folder: Path,
    workers: int = 2,
    source_limits: dict[str, int] | None = None,
    env: dict[str, str] | None = None,
) -> dict:
    """Start the cluster in ``folder`` and return its status once every service answers.
    Every service gets ``env`` (default: this process's environment), so the workers read the
    same warehouse root and source URLs as the command that started them. If some services of
    the cluster still run (a worker was killed, PostgreSQL stopped), only the missing ones are
    started, on the same addresses.

    Raises:
        ConfigError: every service already runs, a program is missing, or a service did not
            start.
    """
    folder = folder.resolve()
    previous = (
        json.loads((folder / "cluster.json").read_text())
        if (folder / "cluster.json").exists()
        else None
    )
    names = ["postgres", "redis", "webserver", "daemon"]
    names += [f"worker-{n}" for n in range(1, workers + 1)]
    if previous and all(_alive(previous, name) for name in names):
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
    secrets = credentials.load_or_create(folder)
    secret_env = secrets.environment(config.redis_port)
    os.environ.update(secret_env)  # for this process's own instance and pings
    state: dict = previous or {"dir": str(folder), "services": {}, "workers": []}
    state["workers"] = []

    def record(name: str, pid: int) -> None:
        state["services"][name] = pid
        (folder / "cluster.json").write_text(json.dumps(state, indent=1, allow_nan=False))

    postgres = Postgres(folder / "postgres", config.postgres_port, secrets.postgres)
    if not postgres.running():
        record("postgres", postgres.start())
    state["postgres"] = config.postgres_url
    if not _alive(state, "redis"):
        conf = _redis_conf(config, secrets, folder)
        record("redis", _start("redis", ["redis-server", str(conf)], dict(os.environ), logs))
    _wait("Redis", lambda: _redis_ok(config.redis_port, secrets.redis), logs / "redis.log")
    state["redis"] = config.redis_address
    instance = _prepare_instance(home, config)
    env = {**_environment(dict(os.environ) if env is None else env, home), **secret_env}
    workspace = str(PROJECT_ROOT / "workspace.yaml")
    port = int(state["webserver"].rsplit(":", 1)[1]) if state.get("webserver") else free_port()
    state["webserver"] = f"http://127.0.0.1:{port}"
    if not _alive(state, "webserver"):
        cmd = [_bin("dagster-webserver"), "-w", workspace, "-h", "127.0.0.1", "-p", str(port)]
        record("webserver", _start("webserver", cmd, env, logs))
    if not _alive(state, "daemon"):
        cmd = [_bin("dagster-daemon"), "run", "-w", workspace]
        record("daemon", _start("daemon", cmd, {**env, **DAEMON_ENV}, logs))
    host = socket.gethostname()
    for n in range(1, workers + 1):
        name = f"worker-{n}"
        state["workers"].append(f"{name}@{host}")
        if _alive(state, name):
            continue
        worker_env = _worker_env(env, folder, name, workers)
        record(name, _start(name, _worker_command(name), worker_env, logs))
    (folder / "cluster.json").write_text(json.dumps(state, indent=1, allow_nan=False))
    _wait(
        "the webserver",
        lambda: _http_ok(f"{state['webserver']}/server_info"),
        logs / "webserver.log",
    )
    _wait("the daemon", lambda: _daemon_ok(instance), logs / "daemon.log")
    expected = set(state["workers"])
    _wait(
        f"{workers} worker(s)",
        lambda: expected <= answering_workers(config, secrets),
        logs / "worker-1.log",
    )
    return status(folder)


def _worker_env(env: dict[str, str], folder: Path, name: str, workers: int) -> dict[str, str]:
    scratch = folder / "workers" / name
    scratch.mkdir(exist_ok=True)
    worker_env = {
        **env,
        WORKER_ENV: f"{name}@{socket.gethostname()}",
        "EPISODE_WAREHOUSE_SCRATCH": str(scratch),  # an export's PNG frames
        "EPISODE_WAREHOUSE_LOCAL_COPY": str(scratch),  # a gs:// root's local copy
        # the workers share this machine's cores
        "EPISODE_WAREHOUSE_WORKERS": env.get(
            "EPISODE_WAREHOUSE_WORKERS", str(max(1, (os.cpu_count() or 1) // workers))
        ),
        "TMPDIR": str(scratch),
    }
    # the Celery settings dagster_celery.app imports: deploy's own, read from the environment
    worker_env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(PROJECT_ROOT / "deploy" / "celery"), env.get("PYTHONPATH")) if p
    )
    return worker_env


def _worker_command(name: str) -> list[str]:
    cmd = [_bin("celery"), "-A", "warehouse_cli.cluster.celery_app", "worker", "-n", f"{name}@%h"]
    cmd += ["-Q", QUEUE, "--concurrency=1", "--prefetch-multiplier=1", "--loglevel=INFO"]
    return cmd + ["--without-gossip", "--without-mingle"]


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


def health(folder: Path) -> dict[str, bool]:
    """Which services answer, each asked the way its clients ask it: PostgreSQL a query with
    the cluster's password, Redis a PING, the webserver ``/server_info``, the daemon fresh
    heartbeats of its three loops (needs PostgreSQL), each worker Celery's ping (needs Redis).
    A service whose process is gone or hangs is ``False``."""
    folder = folder.resolve()
    state = json.loads((folder / "cluster.json").read_text())
    config = _saved_config(folder)
    secrets = credentials.load(folder)
    answers = {
        "postgres": Postgres(folder / "postgres", config.postgres_port, secrets.postgres).answers(),
        "redis": _redis_ok(config.redis_port, secrets.redis),
        "webserver": bool(state.get("webserver")) and _http_ok(f"{state['webserver']}/server_info"),
        "daemon": False,
    }
    if answers["postgres"] and _alive(state, "daemon"):
        with contextlib.suppress(Exception):  # noqa: BLE001 - any failure means "not answering"
            answers["daemon"] = _daemon_ok(open_instance(folder))
    workers = answering_workers(config, secrets) if answers["redis"] else set()
    for name in state.get("workers", []):
        answers[name.split("@")[0]] = name in workers and _alive(state, name.split("@")[0])
    return answers


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
        config = _saved_config(folder)
        Postgres(folder / "postgres", config.postgres_port, "").stop()  # pg_ctl: no password
        _terminate(services["postgres"], 10.0)
    deadline = time.monotonic() + 10
    while (left := status(folder)["pids"]) and time.monotonic() < deadline:
        time.sleep(0.2)  # signalled processes exiting
    if not left:
        path.unlink()
    return status(folder) if left else {"dir": str(folder), "running": False, "pids": []}
