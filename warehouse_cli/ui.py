"""``warehouse ui``: ``dagster dev`` and the episode viewer, each in its own process group,
stopped cleanly on Ctrl-C/TERM. While the viewer runs, Dagster's runs see its URL
(``EPISODE_WAREHOUSE_VIEWER_URL``): every TED and catalog materialization links to its
partition's page."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from episode_warehouse.viewer.links import VIEWER_URL_ENV
from warehouse_cli import processes
from warehouse_cli.environment import PROJECT_ROOT, default_dagster_home


def start_dagster_dev(port: int, env: dict[str, str], log_file=None) -> subprocess.Popen:
    """Start ``dagster dev`` on 127.0.0.1:port in a new session (its own process group)."""
    cmd = [sys.executable, "-m", "dagster", "dev", "-w", str(PROJECT_ROOT / "workspace.yaml")]
    return processes.start(
        [*cmd, "-h", "127.0.0.1", "-p", str(port)], env=env, cwd=PROJECT_ROOT, log=log_file
    )


def stop_process_group(proc: subprocess.Popen, timeout: float = 15.0) -> None:
    """Stop dagster dev and its whole tree (webserver, daemon, code server)."""
    processes.stop(proc, timeout)


def start_viewer(port: int, root: Path | None, env: dict[str, str]) -> subprocess.Popen:
    """``warehouse view`` on 127.0.0.1:port over ``root`` (default: the environment's)."""
    cmd = [sys.executable, "-m", "warehouse_cli.main", "view", "--port", str(port)]
    return processes.start([*cmd, *(["--root", str(root)] if root else [])], env=env,
                           cwd=PROJECT_ROOT)  # fmt: skip


def _make_local_root(root: Path | None) -> None:
    """A local warehouse root the UI is about to build in, made if new (``warehouse view``
    alone refuses a root that does not exist: there it is most likely a mistyped one)."""
    from episode_warehouse.storage import parse_root

    parse_root(root, writer=True).folder.mkdir(parents=True, exist_ok=True)


def run_ui(port: int, demo_folder: Path | None, viewer_port: int = 0) -> int:
    """``dagster dev`` (and the episode viewer on ``viewer_port``; 0: none) until Ctrl-C or
    SIGTERM (a second one kills at once); with the demo, the GCS emulator serves its bucket
    meanwhile. Nothing of the process trees is left behind."""
    root = demo_folder / "warehouse" if demo_folder is not None else None  # else the env's
    env = {**os.environ, "DAGSTER_HOME": str(default_dagster_home(root))}
    with contextlib.ExitStack() as stack:
        if demo_folder is not None:
            from warehouse_cli.demo import demo_environment
            from warehouse_fixtures.demo import write_demo_fixtures
            from warehouse_fixtures.gcs_emulator import running_emulator, upload_tree

            summary = write_demo_fixtures(demo_folder / "fixtures")
            endpoint = stack.enter_context(running_emulator())
            upload_tree(endpoint, summary["bucket"], demo_folder / "fixtures" / "atari-bucket")
            env.update(demo_environment(demo_folder, summary, endpoint))
        viewer = None
        if viewer_port:
            from warehouse_cli.view import listening_socket

            listening_socket(viewer_port).close()  # a port in use: one error line, before all
            _make_local_root(root)  # the UI builds there: the viewer shows it as it fills
            viewer = start_viewer(viewer_port, root, env)
            stack.callback(processes.stop, viewer)
            env[VIEWER_URL_ENV] = f"http://127.0.0.1:{viewer_port}"
        proc = start_dagster_dev(port, env)
        url = f"http://127.0.0.1:{port}"
        print(f"starting the Dagster UI on {url} (loading the code location) ...", flush=True)

        def kill() -> None:  # the second Ctrl-C
            for started in (proc, viewer):
                if started is not None:
                    processes.stop(started, timeout=0)

        with processes.signals_stop(kill):
            try:
                if _answers(url, proc):
                    print(f"Dagster UI ready: {url}  (Ctrl-C to stop)", flush=True)
                return proc.wait()
            except KeyboardInterrupt:
                print("stopping the Dagster UI ...", flush=True)
                return 0
            finally:
                processes.stop(proc)
    return 0


def _answers(url: str, proc: subprocess.Popen) -> bool:
    """Wait until the webserver answers (True) or dagster dev has exited (False): the URL is
    announced as ready only when a browser would get the UI (the code location takes a while)."""
    while proc.poll() is None:
        try:
            with urllib.request.urlopen(f"{url}/server_info", timeout=2):
                return True
        except OSError:
            time.sleep(0.5)
    return False
