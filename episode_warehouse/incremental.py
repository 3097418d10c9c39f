"""The one rule for "is this artifact up to date?", used by every stage.

An artifact is a folder with a *record* (``meta.json``, or ``meta/warehouse_export.json`` for a
LeRobot export) written last. The record keeps the stage's ``inputs`` (upstream versions, source
file versions, settings that change bytes, the code version) and ``version =
fingerprint(inputs)``. :func:`build_if_changed` compares that version with the one the inputs give
now: equal, nothing is done; different, the folder is built aside and published atomically.

The same ``version`` is the Dagster ``DataVersion`` every asset returns, so the UI's staleness
and the files on disk are one system: a stage whose inputs did not change keeps its version,
and nothing downstream is marked stale.

Every function takes the warehouse root (:mod:`episode_warehouse.storage`) the artifact belongs
to, and asks the root's artifact for the record that counts and to publish: with a ``gs://``
root the artifact folders are its local copy, the record that counts is the bucket's, a build
publishes to the bucket after its local swap, and :func:`checkout` pulls what another machine
built; with a folder the swap is the publication.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Generic

from typing_extensions import TypeVar

from episode_warehouse.atomic import read_json, staged, write_json, write_lock
from episode_warehouse.errors import (
    ConcurrentWriteError,
    ForeignArtifactError,
    NotMaterializedError,
)
from episode_warehouse.records import Record
from episode_warehouse.storage import Root

log = logging.getLogger(__name__)
# the record type a call reads; the functions' ``record_type=Record`` defaults carry a type
# ignore because mypy cannot check a default for a TypeVar parameter (python/mypy#3737)
R = TypeVar("R", bound=Record, default=Record)


def fingerprint(*parts: object) -> str:
    """A short, stable hash of JSON-serialisable values (16 hex digits of sha256).

    Dict keys are sorted, so the order in which inputs were assembled does not matter.
    """
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str, allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Built(Generic[R]):
    """What :func:`build_if_changed` published: the record, whether it rebuilt, the version."""

    meta: R
    rebuilt: bool

    @property
    def version(self) -> str:
        return self.meta.version


def _typed(record_type: type[R], data: dict, subject: Path) -> R | None:
    return record_type.from_json(data, subject=str(subject / record_type.FILE)) if data else None


def published(root: Root, target: Path, record_type: type[R] = Record) -> R | None:  # type: ignore[assignment]
    """The record of the published artifact at ``target`` of ``root``, or None when there is
    none (with a bucket root: the bucket's record; the files need not be here, see
    :func:`checkout`).

    Raises:
        CorruptInputError: the record is not a ``record_type``.
    """
    target = Path(target)
    return _typed(record_type, root.artifact_at(target, record_type.FILE).read()[0], target)


def published_version(root: Root, target: Path) -> str | None:
    """The ``version`` of the artifact published at ``target``, or None."""
    record = published(root, target)
    return record.version if record is not None else None


def checkout(root: Root, target: Path, record_type: type[R] = Record) -> R | None:  # type: ignore[assignment]
    """:func:`published`, with the artifact's files in ``target``: with a bucket root, the
    published version is pulled into the local copy unless it is there already."""
    target = Path(target)
    artifact = root.artifact_at(target, record_type.FILE)
    current, _ = artifact.read()
    record = _typed(record_type, current, target)  # checked before any file is pulled
    artifact.checkout(current)
    return record


def build_if_changed(
    root: Root,
    target: Path,
    inputs: dict,
    build: Callable[[Path], Record | dict | None],
    *,
    record_type: type[R] = Record,  # type: ignore[assignment]
    lock_timeout_s: float = 600.0,
    upstream: Mapping[Path, str] | None = None,
) -> Built[R]:
    """Publish ``build(staging)`` at ``target`` (of ``root``) unless it holds these ``inputs``.

    Under the writer lock of ``target``: when its record's ``version`` equals
    ``fingerprint(inputs)``, return it (``rebuilt=False``). Otherwise call ``build`` with an
    empty staging folder; it writes the artifact's files there and returns its record (a
    ``record_type`` without ``inputs`` and ``version``, or a dict of fields), or writes the
    record file itself, which is then extended. The record gets ``inputs`` and ``version``, is
    checked as a ``record_type`` and written last; the folder is swapped in atomically. A
    failing ``build`` leaves the previous version as it was. ``upstream`` (artifact folder ->
    the version the build read) is read again after the build, before anything is published:
    an upstream artifact rebuilt or dropped meanwhile (``warehouse drop`` is a writer too)
    publishes nothing. With a bucket root the bucket's
    record is the one compared, and the new version is published to the bucket (meta-last, see
    :class:`~episode_warehouse.storage.Artifact`).

    Raises:
        ForeignArtifactError: ``target`` exists but has no record: files this warehouse did not
            write are never replaced.
        CorruptInputError: the published record, or the one built, is not a ``record_type``.
        DiskFullError: the disk filled up (nothing published).
        ConcurrentWriteError: (bucket root) another machine published this artifact first; an
            ``upstream`` artifact changed during the build.
    """
    target = Path(target)
    version = fingerprint(inputs)
    file = record_type.FILE
    artifact = root.artifact_at(target, file)

    def result(data: dict, rebuilt: bool) -> Built[R]:
        return Built(record_type.from_json(data, subject=str(target / file)), rebuilt)

    with write_lock(target, lock_timeout_s):
        current, generation = artifact.read()
        if current.get("version") == version:
            return result(current, False)
        local = artifact.working_record(current, version)
        if local.get("version") != version:  # else: built here, not yet published
            _build_here(target, inputs, version, build, record_type, local,
                        lambda: _check_upstream(root, target, upstream or {}))  # fmt: skip
        _check_upstream(root, target, upstream or {})
        return result(artifact.publish(current, generation), True)


def _check_upstream(root: Root, target: Path, upstream: Mapping[Path, str]) -> None:
    """Each upstream artifact still holds the version the build read.

    Raises:
        ConcurrentWriteError: one was rebuilt or dropped meanwhile (naming it).
    """
    for folder, version in upstream.items():
        if not version:  # an upstream folder laid out by hand (no record): nothing to compare
            continue
        now = root.artifact_at(Path(folder)).read()[0].get("version")
        if now != version:
            said = "was dropped" if now is None else f"was rebuilt (version {now})"
            raise ConcurrentWriteError(
                f"its upstream {folder} {said} while this was built from version {version}: "
                "nothing was published",
                subject=str(target),
                fix="materialize it again (it reads the upstream as it is now)",
            )


def _build_here(
    target: Path,
    inputs: dict,
    version: str,
    build,
    record_type: type[Record],
    current: dict,
    before_swap: Callable[[], None],
) -> dict:
    """Build into a staging folder and swap it in at ``target`` (the caller holds the lock),
    ``before_swap()`` called last, between the build and the swap."""
    file = record_type.FILE
    if not current and target.exists() and any(target.iterdir()):
        raise ForeignArtifactError(
            f"the folder holds files but no {file}: this warehouse did not write it",
            subject=str(target),
            fix="move the folder away (or delete it) and materialize again",
        )
    with staged(target) as tmp:
        built = build(tmp)
        extra = built.fields_json() if isinstance(built, Record) else (built or {})
        meta = {**read_json(tmp / file), **extra, "inputs": inputs, "version": version}
        meta.pop("published", None)
        record_type.from_json(meta, subject=f"{target / file} (as built)")
        (tmp / file).parent.mkdir(parents=True, exist_ok=True)
        write_json(tmp / file, meta)
        before_swap()
    log.info("published %s (version %s)", target, version)
    return meta


def require(
    root: Root,
    folder: Path,
    asset: str,
    key: str,
    record_type: type[R] = Record,  # type: ignore[assignment]
    *,
    here: bool = False,
) -> R:
    """The record of an upstream artifact of ``root``, its files in ``folder`` (pulled from the
    bucket when the root is one; ``here``: the copy already in ``folder``, pulled by the caller).

    Raises:
        NotMaterializedError: it has not been built.
        CorruptInputError: its record is not a ``record_type``.
    """
    folder = Path(folder)
    if here:
        meta = _typed(record_type, read_json(folder / record_type.FILE), folder)
    else:
        meta = checkout(root, folder, record_type)
    if meta is None or not meta.version:
        raise NotMaterializedError(
            "this upstream stage is not materialized",
            subject=str(folder),
            fix=f"materialize {asset} for {key} first",
        )
    return meta
