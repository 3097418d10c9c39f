"""Retry transient failures only, at both levels: the step's retry policy and the run's.

Every asset body runs inside :func:`only_transient_retries`. A failure that is not a
:class:`~episode_warehouse.errors.TransientError` (network, 5xx, timeouts, a busy lock, a lost
worker or database) becomes a ``dg.Failure(allow_retries=False)``, so bad data, a 404/403 or a
wrong setting fail once, with their own message, and the run is tagged
``dagster/retry_on_asset_or_op_failure: false`` so the cluster's run retries (which retry step
failures: a step can also fail outside its body, e.g. when PostgreSQL restarts while Dagster
records its output) leave it alone. A transient failure is raised as it is: the raw assets'
``RAW_RETRY_POLICY`` retries the step, and the run retries the rest. A run tagged
``warehouse/step-retries: off`` (the ``warehouse`` command line sets it: somebody is waiting at
the terminal, and sources are already retried inside the step with bounded backoff) is not
retried at all.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

import dagster as dg

from episode_warehouse.errors import is_transient

log = logging.getLogger(__name__)
RAW_RETRY_POLICY = dg.RetryPolicy(max_retries=3, delay=15, backoff=dg.Backoff.EXPONENTIAL)
NO_RETRIES_TAG = "warehouse/step-retries"
# Dagster's run tag (documented with run retries) that overrides the instance's
# retry_on_asset_or_op_failure for one run
RUN_RETRY_ON_STEP_FAILURE_TAG = "dagster/retry_on_asset_or_op_failure"


@contextlib.contextmanager
def only_transient_retries(
    context: dg.AssetExecutionContext | dg.OpExecutionContext,
) -> Iterator[None]:
    op_context = (
        context.op_execution_context if isinstance(context, dg.AssetExecutionContext) else context
    )
    try:
        yield
    except Exception as exc:
        if is_transient(exc) and op_context.run_tags.get(NO_RETRIES_TAG) != "off":
            raise
        _no_run_retry(op_context)
        raise dg.Failure(description=str(exc), allow_retries=False) from exc


def _no_run_retry(context: dg.OpExecutionContext) -> None:
    """Tag the run so that run retries skip it (read when its failure is recorded)."""
    run_id = context.run_id
    try:
        if context.instance.get_run_by_id(run_id) is not None:  # None: a direct invocation
            context.instance.add_run_tags(run_id, {RUN_RETRY_ON_STEP_FAILURE_TAG: "false"})
    except Exception as exc:  # noqa: BLE001 - the database may be the failure: fail anyway
        log.warning("could not mark run %s as not to be retried: %s", run_id, exc)
