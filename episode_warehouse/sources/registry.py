"""The registry of sources: one line per source (its ``SOURCE``), looked up by name.

Adding a source is a folder ``episode_warehouse/sources/<name>/`` whose ``source.py`` defines
``SOURCE``, one line below, and the source's raw and decoded assets (``assets/sources/<name>.py``
and one line in ``assets/sources/__init__.py``); the TED, catalog, statistics and export stages,
their checks and the command line are generated from the two registries
(docs/architecture.md, "Adding a source").
"""

from __future__ import annotations

import logging
import re
from contextlib import contextmanager

from episode_warehouse.errors import ConfigError, PartitionKeyError
from episode_warehouse.sources.atari.source import SOURCE as ATARI
from episode_warehouse.sources.lerobot.source import SOURCE as LEROBOT
from episode_warehouse.sources.minari.source import SOURCE as MINARI
from episode_warehouse.sources.openx.source import SOURCE as OPENX
from episode_warehouse.sources.source import Source

log = logging.getLogger(__name__)
_NAME_RE = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
_SOURCES: dict[str, Source] = {}


def register(source: Source) -> Source:
    """Add ``source`` to the registry (a plug-in's one line); returns it.

    Raises:
        ConfigError: its name is taken or is not a lowercase identifier.
    """
    if not _NAME_RE.match(source.name):
        raise ConfigError(
            "a source name is a lowercase identifier (letters, digits, '_')",
            subject=repr(source.name),
            fix="rename the source",
        )
    if source.name in _SOURCES:
        raise ConfigError(
            "a source of that name is registered already",
            subject=source.name,
            fix="give the new source another name",
        )
    _SOURCES[source.name] = source
    return source


@contextmanager
def registered(source: Source):
    """``source`` registered for the ``with`` block only (a plug-in under test)."""
    register(source)
    try:
        yield source
    finally:
        del _SOURCES[source.name]


def names() -> tuple[str, ...]:
    """The registered sources' names, in registration order."""
    return tuple(_SOURCES)


def get(name: str) -> Source:
    """The source called ``name``.

    Raises:
        PartitionKeyError: no such source.
    """
    try:
        return _SOURCES[name]
    except KeyError:
        raise PartitionKeyError(
            f"unknown source (expected one of {', '.join(_SOURCES)})", subject=repr(name)
        ) from None


def check_partition(name: str, partition: str) -> str:
    """``partition`` checked by its source's rule and as the folder names the warehouse makes
    of it (``PartitionKeyError`` naming the shape or the name that would not fit)."""
    from episode_warehouse.partition_keys import check_partition_key

    get(name).check_partition(partition)
    return check_partition_key(name, partition)


def dataset_name(source: str, partition: str) -> str:
    """The name the partition's standardized data carries (``bridge``, ``lerobot:lab/arm``)."""
    return get(source).dataset_name(partition)


def fps(name: str, partition: str, recorded: float | None = None) -> float | None:
    """Steps per second of a partition: what its decoder recorded (``TedRecord.fps``, LeRobot's
    info.json; a control rate of 1/dt may be fractional), else the source's; None (with a
    warning) where neither knows it: a rate is never guessed."""
    if recorded:
        return float(recorded)
    rate = get(name).fps(partition)
    if rate is None:
        log.warning(
            "the control rate of %s %s is unknown (its source does not record it and the "
            "table of rates has no entry): its fps stays empty",
            name, partition,
        )  # fmt: skip
        return None
    return float(rate)


def partition_task(name: str, partition: str) -> str | None:
    """The task of every episode of ``partition``, or ``None`` (tasks are per episode)."""
    rule = get(name).partition_task
    return rule(partition) if rule is not None else None


for _source in (ATARI, OPENX, LEROBOT, MINARI):  # the registry: one entry per source
    register(_source)
