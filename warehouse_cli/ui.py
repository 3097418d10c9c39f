"""``warehouse ui``: ``dagster dev`` in its own process group, stopped cleanly on Ctrl-C/TERM."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

from warehouse_cli.environment import PROJECT_ROOT, default_dagster_home


def start_dagster_dev(port: int, env: dict[str, str], log_file=None) -> subprocess.Popen:
    """Start ``dagster dev`` on 127.0.0.1:port in a new session (its own process group)."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "dagster",
            "dev",
            "-w",
            str(PROJECT_ROOT / "workspace.yaml"),
            "-h",
            "127.0.0.1",
            "-p",
            str(port),
        ],
        cwd=PROJECT_ROOT,
        env=env,
        start_new_session=True,
        stdout=log_file,
        stderr=subprocess.STDOUT if log_file else None,
    )


def stop_process_group(proc: subprocess.Popen, timeout: float = 15.0) -> None:
    """SIGTERM the whole group, then SIGKILL what is left after ``timeout``."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)  # children that outlived their parent


def run_ui(port: int, demo_folder: Path | None) -> int:
    env = {**os.environ, "DAGSTER_HOME": str(default_dagster_home())}
    stack = contextlib.ExitStack()
    with stack:
        if demo_folder is not None:
            from episode_warehouse.fixtures.demo import write_demo_fixtures
            from episode_warehouse.fixtures.gcs_emulator import running_emulator, upload_tree
            from warehouse_cli.demo import demo_environment

            summary = write_demo_fixtures(demo_folder / "fixtures")
            endpoint = stack.enter_context(running_emulator())
            upload_tree(endpoint, summary["bucket"], demo_folder / "fixtures" / "atari-bucket")
            env.update(demo_environment(demo_folder, summary, endpoint))
        proc = start_dagster_dev(port, env)
        print(f"Dagster UI: http://127.0.0.1:{port}  (Ctrl-C to stop)")
        previous = signal.signal(signal.SIGTERM, lambda *_: stop_process_group(proc))
        try:
            return proc.wait()
        except KeyboardInterrupt:
            return 0
        finally:
            stop_process_group(proc)
            signal.signal(signal.SIGTERM, previous)
