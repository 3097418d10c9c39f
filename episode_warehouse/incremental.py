"""The one rule for "is this artifact up to date?", used by every stage.

An artifact is a folder with a *record* (``meta.json``, or ``meta/warehouse_export.json`` for a
LeRobot export) written last. The record keeps the stage's ``inputs`` (upstream versions, source
file versions, settings that change bytes, the code version) and ``version =
fingerprint(inputs)``. :func:`build_if_changed` compares that version with the one the inputs give
now: equal, nothing is done; different, the folder is built aside and published atomically.

The same ``version`` is the Dagster ``DataVersion`` every asset returns, so the UI's staleness
and the files on disk are one system: a stage whose inputs did not change keeps its version,
and nothing downstream is marked stale.

Every function takes the warehouse root (:mod:`episode_warehouse.roots`) the artifact belongs
to. With a ``gs://`` root the artifact folders are its local copy
(:mod:`episode_warehouse.bucket`): the record that counts is the bucket's, a build publishes to
the bucket after its local swap, and :func:`checkout` pulls what another machine built.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from episode_warehouse.atomic import read_json, staged, unpublish, write_json, write_lock
from episode_warehouse.errors import ForeignArtifactError, NotMaterializedError
from episode_warehouse.roots import Root

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


def _same_copy(local: dict, remote: dict) -> bool:
    from episode_warehouse.bucket.artifact import PUBLISHED

    return bool(local) and local.get(PUBLISHED) == remote.get(PUBLISHED)


def published(root: Root, target: Path, record: str = RECORD) -> dict:
    """The record of the published artifact at ``target`` of ``root``, or {} when there is none
    (with a bucket root: the bucket's record; the files need not be here, see :func:`checkout`).
    """
    remote = root.remote(Path(target), record)
    if remote is not None:
        return remote.read()[0]
    return read_json(Path(target) / record)


def checkout(root: Root, target: Path, record: str = RECORD) -> dict:
    """:func:`published`, with the artifact's files in ``target``: with a bucket root, the
    published version is pulled into the scratch folder unless it is there already."""
    target = Path(target)
    remote = root.remote(target, record)
    if remote is None:
        return read_json(target / record)
    current, _ = remote.read()
    if current and not _same_copy(read_json(target / record), current):
        with write_lock(target):
            if not _same_copy(read_json(target / record), current):
                remote.pull(target, current)
    return current


def build_if_changed(
    root: Root,
    target: Path,
    inputs: dict,
    build: Callable[[Path], dict | None],
    *,
    record: str = RECORD,
    lock_timeout_s: float = 600.0,
) -> Built:
    """Publish ``build(staging)`` at ``target`` (of ``root``) unless it holds these ``inputs``.

    Under the writer lock of ``target``: when its record's ``version`` equals
    ``fingerprint(inputs)``, return it (``rebuilt=False``). Otherwise call ``build`` with an
    empty staging folder; it writes the artifact's files there and returns extra record fields
    (or writes ``record`` itself, which is then extended). The record gets ``inputs`` and
    ``version`` and is written last; the folder is swapped in atomically. A failing ``build``
    leaves the previous version as it was. With a bucket root the bucket's record is the one
    compared, and the new version is published to the bucket (meta-last, see
    :class:`~episode_warehouse.bucket.artifact.RemoteArtifact`).

    Raises:
        ForeignArtifactError: ``target`` exists but has no record: files this warehouse did not
            write are never replaced.
        DiskFullError: the disk filled up (nothing published).
        ConcurrentWriteError: (bucket root) another machine published this artifact first.
    """
    target = Path(target)
    version = fingerprint(inputs)
    remote = root.remote(target, record)
    with write_lock(target, lock_timeout_s):
        if remote is None:
            current = read_json(target / record)
            if current.get("version") == version:
                return Built(current, False)
            return Built(_build_here(target, inputs, version, build, record, current), True)
        current, generation = remote.read()
        if current.get("version") == version:
            return Built(current, False)
        local = read_json(target / record)
        if local.get("version") != version:
            if local and not _same_copy(local, current):
                unpublish(target)  # a stale scratch copy: never build on files of another version
                local = {}
            _build_here(target, inputs, version, build, record, local)
        return Built(remote.push(target, current, generation), True)


def _build_here(
    target: Path, inputs: dict, version: str, build, record: str, current: dict
) -> dict:
    """Build into a staging folder and swap it in at ``target`` (the caller holds the lock)."""
    if not current and target.exists() and any(target.iterdir()):
        raise ForeignArtifactError(
            f"the folder holds files but no {record}: this warehouse did not write it",
            subject=str(target),
            fix="move the folder away (or delete it) and materialize again",
        )
    with staged(target) as tmp:
        extra = build(tmp) or {}
        meta = {**read_json(tmp / record), **extra, "inputs": inputs, "version": version}
        meta.pop("published", None)
        (tmp / record).parent.mkdir(parents=True, exist_ok=True)
        write_json(tmp / record, meta)
    log.info("published %s (version %s)", target, version)
    return meta


def require(root: Root, folder: Path, asset: str, key: str, *, here: bool = False) -> dict:
    """The record of an upstream artifact of ``root``, its files in ``folder`` (pulled from the
    bucket when the root is one; ``here``: the copy already in ``folder``, pulled by the caller).

    Raises:
        NotMaterializedError: it has not been built.
    """
    meta = read_json(folder / RECORD) if here else checkout(root, folder)
    if not meta.get("version"):
        raise NotMaterializedError(
            "this upstream stage is not materialized",
            subject=str(folder),
            fix=f"materialize {asset} for {key} first",
        )
    return meta
