"""One hierarchy for every error the warehouse raises on purpose.

Each message names the input (a file, a URL, a partition key) and says what to do about it, so
that a one-line error in the Dagster UI or the CLI is enough to act on.
"""

from __future__ import annotations


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


class ConfigError(WarehouseError):
    """A setting (environment variable, URL, folder) is malformed or unusable."""


class PartitionKeyError(WarehouseError):
    """A partition key is not one this warehouse knows."""


class SourceUnavailableError(WarehouseError):
    """A source (bucket, mirror, hub) could not be reached after bounded retries."""


class CorruptInputError(WarehouseError):
    """A source file is malformed: bad gzip, inconsistent arrays, a bad tar or pickle."""


class ForbiddenPickleError(CorruptInputError):
    """A pickle names a global that the restricted unpickler does not allow."""


class NotMaterializedError(WarehouseError):
    """An artifact that a step needs has not been built yet."""


class CatalogQueryError(WarehouseError):
    """A catalog query is refused (not read-only) or failed in DuckDB."""


class ExportError(WarehouseError):
    """A LeRobot export cannot be written as asked."""


class ConcurrentWriteError(WarehouseError):
    """Another process holds the write lock of the same artifact."""
