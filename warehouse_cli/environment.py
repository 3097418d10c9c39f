"""Where the CLI's Dagster instance lives (``DAGSTER_HOME``, default ``./.dagster_home``)."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
DAGSTER_YAML = """\
# written by `warehouse`: one catalog writer at a time, a few runs in parallel
concurrency:
  pools:
    default_limit: 1
  runs:
    max_concurrent_runs: 4
telemetry:
  enabled: false
# progress of long steps (files downloaded, checkpoints decoded, ...) in run logs
python_logs:
  managed_python_loggers: [episode_warehouse]
  python_log_level: INFO
"""


def default_dagster_home() -> Path:
    """``$DAGSTER_HOME``, else ``<project>/.dagster_home``, created with a ``dagster.yaml``."""
    home = Path(os.environ.get("DAGSTER_HOME") or PROJECT_ROOT / ".dagster_home").resolve()
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists():
        config.write_text(DAGSTER_YAML)
    return home


def cli_instance():
    """The persistent Dagster instance of :func:`default_dagster_home`."""
    import dagster as dg

    return dg.DagsterInstance.from_config(str(default_dagster_home()))
