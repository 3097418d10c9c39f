"""The one rule for "is this artifact up to date?", used by every stage.

An artifact is a folder with a *record* (``meta.json``, or ``meta/warehouse_export.json`` for a
LeRobot export) written last. The record keeps the stage's ``inputs`` (upstream versions, source
file versions, settings that change bytes, the code version) and ``version =
fingerprint(inputs)``. :func:`build_if_changed` compares that version with the one the inputs give
now: equal, nothing is done; different, the folder is built aside and published atomically.

The same ``version`` is the Dagster ``DataVersion`` every asset returns, so the UI's staleness
and the files on disk are one system: a stage whose inputs did not change keeps its version,
and nothing downstream is marked stale.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from episode_warehouse.atomic import read_json, staged, write_json, write_lock
from episode_warehouse.errors import ForeignArtifactError

log = logging.getLogger(__name__)
RECORD = "meta.json"


def fingerprint(*parts: object) -> str:
    """A short, stable hash of JSON-serialisable values (16 hex digits of sha256).

    Dict keys are sorted, so the order in which inputs were assembled does not matter.
    """
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Built:
    """What :func:`build_if_changed` published: the record, whether it rebuilt, the version."""

    meta: dict
    rebuilt: bool

    @property
    def version(self) -> str:
        return self.meta["version"]


def published(target: Path, record: str = RECORD) -> dict:
    """The record of the published artifact at ``target``, or {} when there is none."""
    return read_json(Path(target) / record)


def build_if_changed(
    target: Path,
    inputs: dict,
    build: Callable[[Path], dict | None],
    *,
    record: str = RECORD,
    lock_timeout_s: float = 600.0,
) -> Built:
    """Publish ``build(staging)`` at ``target`` unless it already holds these ``inputs``.

    Under the writer lock of ``target``: when its record's ``version`` equals
    ``fingerprint(inputs)``, return it (``rebuilt=False``). Otherwise call ``build`` with an
    empty staging folder; it writes the artifact's files there and returns extra record fields
    (or writes ``record`` itself, which is then extended). The record gets ``inputs`` and
    ``version`` and is written last; the folder is swapped in atomically. A failing ``build``
    leaves the previous version as it was.

    Raises:
        ForeignArtifactError: ``target`` exists but has no record: files this warehouse did not
            write are never replaced.
        DiskFullError: the disk filled up (nothing published).
    """
    target = Path(target)
    version = fingerprint(inputs)
    with write_lock(target, lock_timeout_s):
        current = published(target, record)
        if current.get("version") == version:
            return Built(current, False)
        if not current and target.exists() and any(target.iterdir()):
            raise ForeignArtifactError(
                f"the folder holds files but no {record}: this warehouse did not write it",
                subject=str(target),
                fix="move the folder away (or delete it) and materialize again",
            )
        with staged(target) as tmp:
            extra = build(tmp) or {}
            meta = {**read_json(tmp / record), **extra, "inputs": inputs, "version": version}
            (tmp / record).parent.mkdir(parents=True, exist_ok=True)
            write_json(tmp / record, meta)
        log.info("published %s (version %s)", target, version)
        return Built(meta, True)
