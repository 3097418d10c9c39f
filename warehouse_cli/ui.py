"""``warehouse ui``: ``dagster dev`` in its own process group, stopped cleanly on Ctrl-C/TERM."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

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


def run_ui(port: int, demo_folder: Path | None) -> int:
    """``dagster dev`` until Ctrl-C or SIGTERM (a second one kills at once); with the demo, the
    GCS emulator serves its bucket meanwhile. Nothing of the process tree is left behind."""
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
        proc = start_dagster_dev(port, env)
        url = f"http://127.0.0.1:{port}"
        print(f"starting the Dagster UI on {url} (loading the code location) ...", flush=True)
        kill = lambda: processes.stop(proc, timeout=0)  # noqa: E731 - the second Ctrl-C
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
