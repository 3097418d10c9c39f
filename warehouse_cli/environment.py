"""Environment defaults the CLI applies before it loads the code location."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]


def default_dagster_home() -> Path:
    """``$DAGSTER_HOME``, else ``<project>/.dagster_home`` (created, and exported)."""
    home = Path(os.environ.get("DAGSTER_HOME") or PROJECT_ROOT / ".dagster_home").resolve()
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists():
        config.write_text(
            "# written by `warehouse`: one catalog writer at a time, a few runs in parallel\n"
            "concurrency:\n  pools:\n    default_limit: 1\n"
            "  runs:\n    max_concurrent_runs: 4\n"
            "telemetry:\n  enabled: false\n"
            "# progress of long steps (files downloaded, checkpoints decoded, ...) in run logs\n"
            "python_logs:\n  managed_python_loggers: [episode_warehouse]\n"
            "  python_log_level: INFO\n"
        )
    os.environ["DAGSTER_HOME"] = str(home)
    return home
