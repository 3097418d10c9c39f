"""Retry transient failures only: the raw assets' retry policy, and what it may act on.

Dagster retries a step whose body raises; :func:`only_transient_retries` turns every failure
that is not a :class:`~episode_warehouse.errors.TransientError` (network, 5xx, timeouts, a busy
lock, a lost worker) into a ``dg.Failure(allow_retries=False)``, so bad data, a 404/403 or a
wrong setting fail once, with their own message. A run tagged ``warehouse/step-retries: off``
(the ``warehouse`` command line sets it: somebody is waiting at the terminal, and sources are
already retried inside the step with bounded backoff) is not retried at all.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import dagster as dg

from episode_warehouse.errors import is_transient

RAW_RETRY_POLICY = dg.RetryPolicy(max_retries=3, delay=15, backoff=dg.Backoff.EXPONENTIAL)
NO_RETRIES_TAG = "warehouse/step-retries"


@contextlib.contextmanager
def only_transient_retries(context: dg.AssetExecutionContext) -> Iterator[None]:
    try:
        yield
    except Exception as exc:
        if is_transient(exc) and context.op_execution_context.run_tags.get(NO_RETRIES_TAG) != "off":
            raise
        raise dg.Failure(description=str(exc), allow_retries=False) from exc
