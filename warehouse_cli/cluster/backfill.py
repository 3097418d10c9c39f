"""``warehouse backfill``: one Dagster backfill of a source's partitions on a running cluster.

Submitted through the webserver's GraphQL API (as the UI's "Materialize" dialog does), so it
shows on the UI's backfill page; the daemon launches one run per partition (every stage of a
partition in one run: stages hand over local files), the queue applies the limits, the Celery
workers run them. ``wait`` follows the runs in the instance and reports per partition.
"""

from __future__ import annotations

import json
import logging
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass

from episode_warehouse.errors import ConfigError
from episode_warehouse.retry import RetryPolicy, call_with_retries
from warehouse_cli.cluster.instance import SOURCE_TAG
from warehouse_cli.cluster.kubernetes import k8s_tags

log = logging.getLogger(__name__)


def _database_errors() -> tuple[type[Exception], ...]:
    import sqlalchemy.exc
    from dagster_postgres.utils import DagsterPostgresException

    return (sqlalchemy.exc.OperationalError, sqlalchemy.exc.DatabaseError, DagsterPostgresException)


# what the instance raises when PostgreSQL stops answering (after dagster_postgres's retries)
DATABASE_ERRORS = _database_errors()
BACKFILL_TAG = "dagster/backfill"
PARTITION_TAG = "dagster/partition"
RETRY_GRACE_S = 20.0  # the daemon launches a run's retry within seconds of its failure
_LAUNCH = """
mutation Launch($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on PythonError { message }
    ... on PartitionKeysNotFoundError { message }
    ... on UnauthorizedError { message }
    ... on InvalidSubsetError { message }
  }
}
"""


def _graphql(webserver: str, query: str, variables: dict) -> dict:
    """One GraphQL request, retried on 5xx and refused connections (a webserver whose pooled
    database connections died with a PostgreSQL restart answers 500 once per connection)."""
    body = json.dumps({"query": query, "variables": variables}, allow_nan=False).encode()
    request = urllib.request.Request(
        f"{webserver}/graphql", body, {"Content-Type": "application/json"}
    )

    def post() -> dict:
        with urllib.request.urlopen(request, timeout=120) as response:
            return json.loads(response.read())

    answer = call_with_retries(
        post,
        policy=RetryPolicy(attempts=6, base_s=1.0),
        subject=f"the cluster's webserver {webserver}",
        fix="`warehouse cluster status` shows whether it runs; `warehouse cluster up`",
    )
    if answer.get("errors"):
        raise ConfigError(f"GraphQL: {answer['errors'][0]['message']}", subject=webserver)
    return answer["data"]


def submit(instance, webserver: str, source: str, partitions: list[str], assets: list[str]) -> str:
    """Submit one backfill of ``assets`` over ``partitions``; returns its id. Partitions of a
    source with dynamic partitions (OpenX, LeRobot) are added to ``instance`` first.

    Raises:
        ConfigError: the webserver refused it (the message says why).
    """
    from warehouse_cli.runner import dynamic_partitions

    dynamic = dynamic_partitions(source)
    if dynamic is not None:
        new = [k for k in partitions if not instance.has_dynamic_partition(dynamic, k)]
        if new:
            instance.add_dynamic_partitions(dynamic, new)
    params = {
        "partitionNames": partitions,
        "assetSelection": [{"path": [name]} for name in assets],
        "fromFailure": False,
        "tags": [
            {"key": k, "value": v} for k, v in {SOURCE_TAG: source, **k8s_tags(source)}.items()
        ],
        "title": f"{source}: {len(partitions)} partition(s)",
    }
    result = _graphql(webserver, _LAUNCH, {"params": params})["launchPartitionBackfill"]
    if result["__typename"] != "LaunchBackfillSuccess":
        raise ConfigError(
            f"the backfill was refused: {result.get('message', result['__typename'])}",
            subject=f"{source} {' '.join(partitions)}",
        )
    return result["backfillId"]


@dataclass(frozen=True)
class PartitionOutcome:
    partition: str
    status: str  # the latest run's status
    runs: int  # runs the partition took (retries included)
    error: str = ""


def _latest_runs(instance, backfill_id: str) -> dict[str, list]:
    from dagster import RunsFilter

    runs = instance.get_runs(RunsFilter(tags={BACKFILL_TAG: backfill_id}))
    by_partition: dict[str, list] = {}
    for run in sorted(runs, key=lambda r: r.run_id):
        by_partition.setdefault(run.tags.get(PARTITION_TAG, ""), []).append(run)
    for runs_of in by_partition.values():
        runs_of.sort(key=lambda r: instance.get_run_record_by_id(r.run_id).create_timestamp)
    return by_partition


def _error(instance, run) -> str:
    from dagster import DagsterEventType

    records = instance.get_records_for_run(
        run.run_id, of_type={DagsterEventType.STEP_FAILURE, DagsterEventType.RUN_FAILURE}
    ).records
    for record in records:
        event = record.event_log_entry.dagster_event
        data = getattr(event, "event_specific_data", None)
        error = getattr(data, "error", None)
        if error is not None:
            from warehouse_cli.runner import our_error

            return our_error(error).message.strip().splitlines()[0]
        if event is not None and event.message:
            return event.message
    return "failed"


def wait(
    instance,
    backfill_id: str,
    partitions: list[str],
    report: Callable[[str], None],
    poll_s: float = 2.0,
    timeout_s: float | None = None,
) -> list[PartitionOutcome]:
    """Follow the backfill until it and every run of it have finished; report each partition's
    status as it changes; returns each partition's outcome."""
    from warehouse_cli.cluster.private_api import FINISHED_STATUSES, BulkActionStatus

    seen: dict[str, str] = {}
    settled = False
    started = time.monotonic()
    while True:
        backfill = instance.get_backfill(backfill_id)
        by_partition = _latest_runs(instance, backfill_id)
        for partition in partitions:
            runs = by_partition.get(partition, [])
            status = runs[-1].status.value if runs else "WAITING"
            label = f"{status}" + (f" (try {len(runs)})" if len(runs) > 1 else "")
            if seen.get(partition) != label:
                seen[partition] = label
                report(f"{partition}: {label.lower()}")
        runs_done = all(
            r.status in FINISHED_STATUSES for runs in by_partition.values() for r in runs
        )
        if all(
            by_partition.get(p) and by_partition[p][-1].status.value == "SUCCESS"
            for p in partitions
        ):
            break  # every partition is built: the daemon's own bookkeeping may lag behind
        if backfill.status != BulkActionStatus.REQUESTED and runs_done:
            failed = any(runs[-1].status.value != "SUCCESS" for runs in by_partition.values())
            if not failed or settled:
                break
            settled = True  # a failed run may still be retried: look once more, a bit later
            time.sleep(RETRY_GRACE_S)
            continue
        settled = False
        if timeout_s is not None and time.monotonic() - started > timeout_s:
            raise ConfigError(
                f"the backfill is still running after {timeout_s:.0f} s",
                subject=backfill_id,
                fix="follow it in the UI (Overview > Backfills)",
            )
        time.sleep(poll_s)
    outcomes = []
    for partition in partitions:
        runs = by_partition.get(partition, [])
        status = runs[-1].status.value if runs else "NOT_LAUNCHED"
        error = "" if status == "SUCCESS" else (_error(instance, runs[-1]) if runs else "")
        outcomes.append(PartitionOutcome(partition, status, len(runs), error))
    return outcomes
