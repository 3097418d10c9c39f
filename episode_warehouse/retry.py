"""Bounded retries with exponential backoff, for calls to sources (buckets, the hub, mirrors).

Only transient failures are retried (:func:`episode_warehouse.errors.is_transient`); the last
failure, or any terminal one, is raised as a warehouse error naming the source
(:func:`episode_warehouse.errors.classify`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from episode_warehouse.errors import classify, is_transient

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RetryPolicy:
    """At most ``attempts`` tries, sleeping ``base_s * 2**k`` (capped at ``max_s``) in between;
    ``timeout_s`` bounds each request."""

    attempts: int = 6
    base_s: float = 0.25
    max_s: float = 8.0
    timeout_s: float = 60.0

    def delay(self, attempt: int) -> float:
        """Seconds to wait before try ``attempt`` (1 = the first retry)."""
        return min(self.max_s, self.base_s * 2 ** (attempt - 1))


def call_with_retries[T](
    fn: Callable[[], T],
    *,
    policy: RetryPolicy,
    subject: str,
    fix: str | None = None,
    on_retry: Callable[[], None] | None = None,
) -> T:
    """``fn()``, retried on transient failures within ``policy``.

    Raises:
        SourceUnreachableError: still failing transiently after the last attempt.
        SourceMissingError: a terminal failure (404, 403, ...), at once.
    """
    for attempt in range(policy.attempts):
        if attempt:
            if on_retry is not None:
                on_retry()
            time.sleep(policy.delay(attempt))
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001 - classified: transient retried, else raised typed
            if not is_transient(exc) or attempt == policy.attempts - 1:
                raise classify(exc, subject=subject, fix=fix) from exc
            log.info(
                "%s: attempt %d failed (%s: %s); retrying",
                subject,
                attempt + 1,
                type(exc).__name__,
                str(exc)[:200],
            )
    raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises
