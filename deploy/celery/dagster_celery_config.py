"""Celery settings of the workers in deploy/ (the module ``dagster_celery.app`` reads): the
broker from the environment, one run per worker process, started tasks visible to monitoring.
`warehouse cluster up` writes the same with local addresses (instance.py: celery_config)."""

import os

broker_url = os.environ["WAREHOUSE_BROKER_URL"]
result_backend = os.environ["WAREHOUSE_BACKEND_URL"]
worker_max_tasks_per_child = 1
task_track_started = True
broker_connection_retry_on_startup = True
