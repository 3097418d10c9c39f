"""The Dagster instance of a cluster: PostgreSQL storage, a queued run coordinator with limits,
run monitoring and retries, and Celery workers behind Redis.

One function renders the ``dagster.yaml`` every process of the cluster reads (webserver,
daemon, workers): ``deploy/dagster.yaml`` is the same text with environment variables in place
of the local addresses. Neither holds a password: both name the environment variables
(``DAGSTER_PG_PASSWORD``, ``WAREHOUSE_BROKER_URL``, ``WAREHOUSE_BACKEND_URL``) that
``credentials.py`` fills from the cluster's 0600 secret files. The workers' Celery settings are
``deploy/celery/dagster_celery_config.py`` itself, which reads the same variables.
"""

from __future__ import annotations

from dataclasses import dataclass, field

QUEUE = "dagster"  # the Celery queue the workers listen on
SOURCE_TAG = "warehouse/source"
POOL_LIMITS = {"catalog_writer": 1, "download": 2}  # the pools the assets name (assets/*.py)
# The daemon's own environment. While its copy of the code location is reloading (after a
# restart, or a database that went away), a backfill submitted then names assets the daemon
# cannot see yet; Dagster fails such a backfill for good unless this is set, and with it
# skips the backfill until the location loads again (dagster asset_backfill.py). A location
# that loads without the asset still fails the backfill. Compose and Helm set the same.
DAEMON_ENV = {"DAGSTER_BACKFILL_RETRY_DEFINITION_CHANGED_ERROR": "1"}


@dataclass(frozen=True)
class ClusterConfig:
    """Addresses and limits of one cluster.

    ``source_limits``: the most runs of one source at once (``{"atari": 1}``); a source not
    named is bounded by ``max_runs`` only. Every partition is built by one run at a time.
    """

    postgres_port: int
    redis_port: int
    max_runs: int = 4
    source_limits: dict[str, int] = field(default_factory=dict)
    start_timeout_s: int = 180  # loading the code location takes ~20 s on two cores
    poll_interval_s: int = 5
    max_retries: int = 2

    @property
    def redis_address(self) -> str:
        """Where Redis listens (for people; the URLs with the password come from credentials)."""
        return f"redis://127.0.0.1:{self.redis_port}"

    @property
    def postgres_url(self) -> str:
        return f"postgresql://dagster@127.0.0.1:{self.postgres_port}/dagster"


def _tag_limits(config: ClusterConfig) -> str:
    limits = [
        # a partition is never built by two runs at once, on any machine
        "      - key: dagster/partition\n        value:\n          applyLimitPerUniqueValue: true"
        "\n        limit: 1"
    ]
    for source, limit in sorted(config.source_limits.items()):
        limits.append(
            f"      - key: {SOURCE_TAG}\n        value: {source}\n        limit: {int(limit)}"
        )
    return "\n".join(limits)


def dagster_yaml(config: ClusterConfig) -> str:
    """The cluster's ``dagster.yaml``."""
    return f"""\
# written by `warehouse cluster up`; every process of the cluster reads it (DAGSTER_HOME)
storage:
  postgres:
    postgres_db:
      hostname: 127.0.0.1
      port: {config.postgres_port}
      username: dagster
      password: {{env: DAGSTER_PG_PASSWORD}}
      db_name: dagster
      scheme: postgresql+psycopg2  # SQLAlchemy 2.1 would pick psycopg 3 otherwise
run_coordinator:
  module: dagster._core.run_coordinator
  class: QueuedRunCoordinator
  config:
    dequeue_use_threads: true
    dequeue_num_workers: 4
    dequeue_interval_seconds: 1
run_launcher:
  module: warehouse_cli.cluster.launcher
  class: WarehouseCeleryRunLauncher
  config:
    broker: {{env: WAREHOUSE_BROKER_URL}}
    backend: {{env: WAREHOUSE_BACKEND_URL}}
    default_queue: {QUEUE}
    config_source:
      worker_max_tasks_per_child: 1
      task_track_started: true
concurrency:
  runs:
    max_concurrent_runs: {config.max_runs}
    tag_concurrency_limits:
{_tag_limits(config)}
  pools:
    default_limit: 1
run_monitoring:
  enabled: true
  start_timeout_seconds: {config.start_timeout_s}
  poll_interval_seconds: {config.poll_interval_s}
  max_resume_run_attempts: 0
run_retries:
  enabled: true
  max_retries: {config.max_retries}
  retry_on_asset_or_op_failure: true  # steps that fail on bad data tag their run: not retried
telemetry:
  enabled: false
python_logs:
  managed_python_loggers: [episode_warehouse]
  python_log_level: INFO
"""
