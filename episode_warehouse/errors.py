"""One hierarchy for every error the warehouse raises on purpose.

Each message names the input (a file, a URL, a partition key) and says what to do about it, so
that a one-line error in the Dagster UI or the CLI is enough to act on.

Every concrete class is also either :class:`TransientError` (the same call may succeed later:
network faults, 5xx answers, timeouts, a busy lock, a crashed worker) or :class:`TerminalError`
(retrying cannot help: bad data, a missing or forbidden object, a wrong setting). Retry
policies act on that distinction only: the raw assets' Dagster ``RetryPolicy`` retries transient
failures and turns everything else into a failure that is not retried (``assets/retries.py``).
:func:`classify` maps foreign exceptions (requests, google-api-core, OSError) onto the two
classes, at the one boundary where the warehouse talks to a source.
"""

from __future__ import annotations

import errno


class WarehouseError(Exception):
    """Base class: ``what`` went wrong with ``subject``; ``fix`` says what to do."""

    def __init__(self, what: str, *, subject: str | None = None, fix: str | None = None) -> None:
        self.what = what
        self.subject = subject
        self.fix = fix
        parts = [f"{subject}: {what}" if subject else what]
        if fix:
            parts.append(f"Fix: {fix}")
        super().__init__(" ".join(parts))

    def __reduce__(self):
        # keyword-only arguments: the default Exception pickling would lose subject and fix,
        # and worker processes send these errors back to their parent pickled
        return (_rebuild, (type(self), self.what, self.subject, self.fix))


def _rebuild(cls: type[WarehouseError], what: str, subject: str | None, fix: str | None):
    return cls(what, subject=subject, fix=fix)


class TransientError(WarehouseError):
    """The same call may succeed when retried (network, 5xx, timeout, busy lock, lost worker)."""


class TerminalError(WarehouseError):
    """Retrying cannot help: the input, the setting or the request itself is wrong."""


class ConfigError(TerminalError):
    """A setting (environment variable, URL, folder) is malformed or unusable."""


class ReadOnlyRootError(ConfigError):
    """A write, or a writer's local folder, asked of a root opened for reading."""


class PartitionKeyError(TerminalError):
    """A partition key is not one this warehouse knows."""


class PartitionConflictError(TerminalError):
    """A partition would cover data another published partition of the same dataset holds
    (overlapping shard ranges, a dataset built whole and as ranges): counted twice if built."""


class SourceUnavailableError(WarehouseError):
    """A source (bucket, mirror, hub) cannot be read; see the two subclasses."""


class SourceUnreachableError(SourceUnavailableError, TransientError):
    """Network failure, HTTP 5xx/429, timeout or reset, after the bounded in-process retries."""


class SourceMissingError(SourceUnavailableError, TerminalError):
    """The source answered: the object does not exist (404) or access is denied (403)."""


class CorruptInputError(TerminalError):
    """A source file is malformed: bad gzip, inconsistent arrays, a bad tar or pickle."""


class ForbiddenPickleError(CorruptInputError):
    """A pickle names a global that the restricted unpickler does not allow."""


class LimitExceededError(CorruptInputError):
    """An input would expand past a configured limit (pixels, bytes, steps); see docs."""


class NotMaterializedError(TerminalError):
    """An artifact that a step needs has not been built yet."""


class FormatVersionError(TerminalError):
    """An artifact was written in another format version than this warehouse reads."""


class ForeignArtifactError(TerminalError):
    """A destination holds files that this warehouse did not write; it is never overwritten."""


class StaleSelectionError(TerminalError):
    """A pinned selection names partitions whose TED was rebuilt since it was saved."""


class CatalogQueryError(TerminalError):
    """A catalog query is refused (not read-only, outside the catalog) or failed in DuckDB."""


class ExportError(TerminalError):
    """A LeRobot export cannot be written as asked."""


class DiskFullError(TerminalError):
    """The disk (or scratch space) filled up; nothing was published."""


class BusyError(TransientError):
    """A bounded pool of work (the viewer's query slots) is full: try again shortly."""


class ConcurrentWriteError(TransientError):
    """Another process holds the write lock of the same artifact."""


class ClusterUnreachableError(TransientError):
    """A service of the cluster (its database, its broker) stopped answering a client."""


class WorkerError(TransientError):
    """A worker process died, or a job ran past its timeout."""


_TRANSIENT_ERRNOS = frozenset(
    {
        errno.ECONNRESET,
        errno.ECONNREFUSED,
        errno.ECONNABORTED,
        errno.ETIMEDOUT,
        errno.EHOSTUNREACH,
        errno.ENETUNREACH,
        errno.ENETDOWN,
        errno.EPIPE,
        errno.EAGAIN,
    }
)
_DISK_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})
# transport failures of requests, urllib3, http.client, httpx and DB-API drivers, named without
# importing them
_TRANSIENT_NAMES = frozenset(
    {
        "ConnectionError",
        "ConnectTimeout",
        "ReadTimeout",
        "Timeout",
        "RetryError",
        "ProtocolError",
        "IncompleteRead",
        "ChunkedEncodingError",
        "RemoteDisconnected",
        "RemoteProtocolError",
        "ReadError",
        "WriteError",
        # DB-API's "database operation" failures (psycopg2, SQLAlchemy): a lost connection to a
        # restarting PostgreSQL, e.g. while a step logs its events
        "OperationalError",
    }
)


def http_status(exc: BaseException) -> int | None:
    """The HTTP status an exception carries (google-api-core, requests, httpx), if any."""
    code = getattr(exc, "code", None)
    if isinstance(code, int) and 100 <= code < 600:
        return code
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    return status if isinstance(status, int) else None


def is_transient(exc: BaseException) -> bool:
    """Whether retrying the call that raised ``exc`` may succeed.

    Transient: our :class:`TransientError`, HTTP 408/429/5xx, timeouts, connection resets and
    refusals, broken pipes. Everything else (404, 403, bad data, programming errors) is not.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        exc = current
        seen.add(id(exc))
        if isinstance(exc, TransientError):
            return True
        if isinstance(exc, TerminalError):
            return False
        status = http_status(exc)
        if status is not None:
            return status in (408, 429) or status >= 500
        if isinstance(exc, TimeoutError | ConnectionError):
            return True
        if isinstance(exc, OSError) and exc.errno in _TRANSIENT_ERRNOS:
            return True
        if type(exc).__name__ in _TRANSIENT_NAMES:
            return True
        current = exc.__cause__ or exc.__context__
    return False


def is_disk_full(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in _DISK_FULL


def classify(exc: BaseException, *, subject: str, fix: str | None = None) -> WarehouseError:
    """``exc`` as a warehouse error: transient or terminal, with the HTTP status if any.

    Used where a source is read; ``subject`` names the URL or file.
    """
    if isinstance(exc, WarehouseError):
        return exc
    status = http_status(exc)
    detail = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
    if status in (401, 403):
        return SourceMissingError(
            f"access denied (HTTP {status})",
            subject=subject,
            fix=fix or "check the URL and your credentials (the object is not public)",
        )
    if status == 404:
        return SourceMissingError(
            "not found (HTTP 404)", subject=subject, fix=fix or "check the URL and the names"
        )
    if is_transient(exc):
        return SourceUnreachableError(
            f"cannot be reached ({detail})",
            subject=subject,
            fix=fix or "check the network and the URL; the request is retried with backoff",
        )
    return SourceMissingError(f"cannot be read ({detail})", subject=subject, fix=fix)
