"""One artifact in the bucket: its record, publishing it meta-last, pulling it back.

An artifact ``<rel>`` (``ted/atari/Pong/1``) is, in the bucket:

- data objects under ``<rel>/.v/<token>/`` (``token`` = version, time, random), one per file,
  each uploaded with ``ifGenerationMatch=0`` (a name is never overwritten);
- its record ``<rel>/<record>`` (``meta.json``), written last with ``ifGenerationMatch`` = the
  record's generation the writer started from, listing every data object with its generation,
  size and crc32c under ``"published"``.

A reader trusts only what a record lists, and reads each object at the listed generation: a
killed upload leaves objects no record names (swept after :data:`DEBRIS_AGE_S`), and of two
writers that started from the same record exactly one replaces it; the other gets a
:class:`~episode_warehouse.errors.ConcurrentWriteError` and deletes its own objects.

A replaced version stays readable for :data:`RETAIN_S` (a day): the new record lists it under
``"retired"`` with the time it was replaced, so a reader that opened the old record (a training
stream in the middle of an epoch) keeps reading the objects it pinned. Each later publish
deletes the retired versions older than that. This needs no object versioning on the bucket.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from episode_warehouse.atomic import read_json, staged, unpublish, write_json, write_lock
from episode_warehouse.blobstore import BlobInfo, DownloadStats, GcsBlobStore, file_crc32c
from episode_warehouse.errors import (
    ConcurrentWriteError,
    CorruptInputError,
    SourceMissingError,
    StaleSelectionError,
)
from episode_warehouse.guards.json_input import load_json
from episode_warehouse.guards.names import checked_name, checked_segment, inside
from episode_warehouse.records import RECORD
from episode_warehouse.storage.base import VERIFIED, Artifact, read_only  # file -> [size, mtime_ns]
from episode_warehouse.storage.bucket.cache import cached_version
from episode_warehouse.storage.bucket.objects import Bucket
from episode_warehouse.threads import TRANSFER_THREADS

log = logging.getLogger(__name__)
PUBLISHED = "published"  # the record's section listing the data objects
DATA = ".v"
DEBRIS_AGE_S = 3600.0  # unlisted data objects older than this are a killed writer's debris
RETIRED = "retired"  # the record's list of replaced versions still kept for their readers
RETAIN_S = 24 * 3600.0  # how long a replaced version stays readable


def _stamp(path: Path) -> list[int]:
    st = path.stat()
    return [st.st_size, st.st_mtime_ns]


def _same_copy(local: dict, remote: dict) -> bool:
    return bool(local) and local.get(PUBLISHED) == remote.get(PUBLISHED)


def check_record(record: object, url: str) -> dict:
    """``record`` (a bucket record, written by anyone who can write the bucket) if its
    published section and retired versions are well-formed: a version token that is one safe
    name, the data prefix made of it, and file entries that are safe relative names with a
    size, generation and crc32c. Checked before any name in it is joined to a local folder or
    used to delete.

    Raises:
        CorruptInputError: naming the record and the entry.
    """
    if not isinstance(record, dict):
        raise CorruptInputError("the artifact's record is not a JSON object", subject=url)
    section = record.get(PUBLISHED)
    if section is not None:
        _check_section(section, url, PUBLISHED)
    retired = record.get(RETIRED, [])
    if not isinstance(retired, list):
        raise CorruptInputError(f"the record's {RETIRED!r} list is malformed", subject=url)
    for old in retired:
        _check_section(old, url, RETIRED)
        if not isinstance(old.get("replaced"), int | float):
            raise CorruptInputError(
                f"a {RETIRED!r} version lacks the time it was replaced", subject=url
            )
    return record


def _check_section(section: object, url: str, what: str) -> None:
    fix = "delete the record; the next materialization publishes it again"
    if not isinstance(section, dict) or not isinstance(section.get("files"), dict):
        raise CorruptInputError(f"the record's {what!r} section is malformed", subject=url)
    token = checked_segment(section.get("token"), subject=url, what="version token")
    if section.get("prefix") != f"{DATA}/{token}":
        raise CorruptInputError(
            f"the record's data prefix {section.get('prefix')!r} is not {DATA}/{token}",
            subject=url,
            fix=fix,
        )
    names = set(section["files"])
    for file, entry in section["files"].items():
        checked_name(file, subject=url, what="record entry")
        parts = file.split("/")
        folder = next(
            ("/".join(parts[:i]) for i in range(1, len(parts)) if "/".join(parts[:i]) in names),
            None,
        )
        if folder is not None:
            raise CorruptInputError(
                f"the record lists {folder!r} as a file and {file!r} inside it: one name "
                "cannot be both a file and a folder",
                subject=url,
                fix=fix,
            )
        ok = (
            isinstance(entry, dict)
            and isinstance(entry.get("size"), int)
            and entry["size"] >= 0
            and str(entry.get("generation", "")).isdigit()
            and isinstance(entry.get("crc32c"), str)
        )
        if not ok:
            raise CorruptInputError(
                f"the record's entry for {file!r} lacks a size, generation or crc32c",
                subject=url,
                fix=fix,
            )


class RemoteArtifact(Artifact):
    """The artifact ``rel`` of the bucket ``root``, whose record file is ``record``; ``local``:
    its folder in a writer's local copy (None: opened for reading)."""

    def __init__(
        self,
        root: Bucket,
        rel: str,
        record: str = RECORD,
        local: Path | None = None,
        *,
        writable: bool = True,
    ) -> None:
        self.root, self.rel, self.record_name = root, rel.strip("/"), record
        self.local, self.writable = local, writable
        self.store: GcsBlobStore = root.store()

    def _check_writable(self) -> None:
        if not self.writable:
            raise read_only(self.url, "to publish or delete")

    @property
    def url(self) -> str:
        return f"{self.root.url}/{self.rel}"

    @property
    def folder(self) -> Path:
        if self.local is None:
            raise read_only(self.url)
        return self.local

    # -- the Artifact interface -------------------------------------------------------------

    def size(self, record: dict, file: str) -> int:
        return self.blob(record, file).size

    def lists(self, record: dict, file: str) -> bool:
        section = record.get(PUBLISHED)
        return isinstance(section, dict) and file in section.get("files", {})

    def read_range(self, record: dict, file: str, start: int, stop: int) -> bytes:
        if stop <= start:
            return b""
        return self._stale_as_such(record, file, lambda b: self.store.read_bytes(
            b.name, b.generation, start, stop - 1))  # fmt: skip

    def _stale_as_such(self, record: dict, file: str, read):
        from google.api_core.exceptions import NotFound

        blob = self.blob(record, file)
        try:
            return read(blob)
        except SourceMissingError as exc:
            if not isinstance(exc.__cause__, NotFound):
                raise
            current = self.read()[0]
            if current.get(PUBLISHED, {}).get("token") == record[PUBLISHED]["token"]:
                raise CorruptInputError(  # the version is current: its object was changed
                    f"the object of {file} is not the generation {blob.generation} its record "
                    "lists (rewritten or deleted outside the warehouse); the version is "
                    "still the published one",
                    subject=f"{self.url} {file}",
                    fix="re-materialize this partition's stage (its objects were altered)",
                ) from None
            raise self.stale(record, file) from None

    def stale(self, record: dict, file: str) -> StaleSelectionError:
        """The error of reading ``file`` of a version whose objects are gone."""
        if not self.read()[0]:
            return StaleSelectionError(
                f"the version this reader opened ({record[PUBLISHED]['token']}) was dropped "
                "(warehouse drop): the partition is no longer in the warehouse",
                subject=f"{self.url} {file}",
                fix="select the episodes again (select_episodes): the catalog no longer lists it",
            )
        return StaleSelectionError(
            f"the version this reader opened ({record[PUBLISHED]['token']}) was replaced and "
            f"its objects are gone (a replaced version stays readable for {RETAIN_S / 3600:g} h)",
            subject=f"{self.url} {file}",
            fix="open it again (a training stream: start a new epoch, which opens the current "
            "version)",
        )

    def mapped(self, record: dict) -> Path | None:
        """A writer's local copy when it holds exactly this version (the machine that built
        or pulled it); else None: objects are read by ranges, or fetched into the cache."""
        if self.local is not None and _same_copy(read_json(self.local / self.record_name), record):
            return self.local
        return None

    def keeps(self, record: dict) -> bool:
        return bool(record.get(PUBLISHED))  # retired objects stay for RETAIN_S (see stale)

    def fetch(self, record: dict) -> Path:
        return cached_version(self, record, record[PUBLISHED]["token"])

    def file_url(self, record: dict, file: str) -> str:
        return f"{self.root.url}/{self.rel}/{record[PUBLISHED]['prefix']}/{file}"

    def checkout(self, record: dict) -> None:
        folder = self.folder
        if record and not _same_copy(read_json(folder / self.record_name), record):
            with write_lock(folder):
                if not _same_copy(read_json(folder / self.record_name), record):
                    self.pull(folder, record)

    def working_record(self, current: dict, version: str) -> dict:
        local = read_json(self.folder / self.record_name)
        if local.get("version") != version and local and not _same_copy(local, current):
            unpublish(self.folder)  # a stale local copy: never build on files of another version
            return {}
        return local

    def publish(self, previous: dict, generation: int) -> dict:
        return self.push(self.folder, previous, generation)

    def _name(self, file: str) -> str:
        return f"{self.rel}/{file}"

    def read(self) -> tuple[dict, int]:
        """The published record and its generation; ({}, 0) when there is none."""
        info = self.store.stat(self._name(self.record_name))
        if info is None:
            return {}, 0
        try:
            data = self.store.read_bytes(info.name, info.generation)
        except SourceMissingError:  # replaced between the two calls: read the new one
            return self.read()
        url = f"{self.root.url}/{info.name}"
        record = load_json(
            data, subject=url, fix="delete the record; the next materialization publishes it again"
        )
        return check_record(record, url), int(info.generation)

    # -- writing --------------------------------------------------------------------------

    def push(self, folder: Path, previous: dict, base_generation: int) -> dict:
        """Publish the local artifact ``folder`` (record included) over ``previous``, the
        record of generation ``base_generation`` ({} and 0: none); returns the record as
        published, which is also written back to ``folder``. ``previous``'s objects are deleted
        once the new record is in place.

        Raises:
            ConcurrentWriteError: another writer replaced the record first (nothing of this
                writer stays in the bucket).
        """
        self._check_writable()
        local = json.loads((folder / self.record_name).read_text())
        local.pop(PUBLISHED, None)
        token = f"{local.get('version', 'x')}-{int(time.time())}-{uuid.uuid4().hex[:8]}"
        prefix = f"{DATA}/{token}"
        files = sorted(
            p.relative_to(folder).as_posix()
            for p in folder.rglob("*")
            if p.is_file() and p.relative_to(folder).as_posix() not in (self.record_name, VERIFIED)
        )

        def upload(file: str) -> tuple[str, BlobInfo]:
            from google.api_core.exceptions import PreconditionFailed

            path, name = folder / file, self._name(f"{prefix}/{file}")
            try:
                info = self.store.upload(name, path=path, if_generation_match=0)
            except PreconditionFailed:  # a retry after a lost answer: the object is ours
                found = self.store.stat(name)
                if found is None:
                    raise
                info = found
            if info.size != path.stat().st_size or info.crc32c != file_crc32c(path):
                raise CorruptInputError(
                    "the uploaded object differs from the file", subject=str(path)
                )
            return file, info

        with ThreadPoolExecutor(TRANSFER_THREADS) as pool:
            uploaded = dict(pool.map(upload, files))
        now = time.time()
        retired = [{**previous[PUBLISHED], "replaced": now}] if previous.get(PUBLISHED) else []
        expired: list[dict] = []
        for old in previous.get(RETIRED, []):
            (retired if now - float(old.get("replaced", 0)) < RETAIN_S else expired).append(old)
        record = {
            **{k: v for k, v in local.items() if k != RETIRED},
            PUBLISHED: {
                "token": token,
                "prefix": prefix,
                "files": {f: i.to_json() for f, i in uploaded.items()},
            },
        }
        if retired:
            record[RETIRED] = retired
        self._replace_record(record, base_generation)
        write_json(folder / self.record_name, record)
        for old in expired:
            self._delete_section(old)
        self._sweep(record)
        log.info(
            "published %s (version %s, %d objects)", self.url, record.get("version"), len(files)
        )
        return record

    def _replace_record(self, record: dict, base_generation: int) -> None:
        from google.api_core.exceptions import PreconditionFailed

        name = self._name(self.record_name)
        body = json.dumps(record, indent=1, sort_keys=True, allow_nan=False).encode()
        try:
            self.store.upload(name, data=body, if_generation_match=base_generation)
        except PreconditionFailed:
            current, _ = self.read()
            if current.get(PUBLISHED, {}).get("token") == record[PUBLISHED]["token"]:
                return  # our own write, answered 412 on a retry after a lost response
            self._delete_listed(record)
            raise ConcurrentWriteError(
                f"another writer published this artifact first (version "
                f"{current.get('version', '?')}); this writer's upload was withdrawn",
                subject=f"{self.root.url}/{name}",
                fix="nothing is mixed: materialize again to check that the winner's version is "
                "current (the run queue keeps one writer per partition to avoid this)",
            ) from None

    def _delete_listed(self, record: dict) -> None:
        self._delete_section(record.get(PUBLISHED, {}))

    def _delete_section(self, section: dict) -> None:
        for file, entry in section.get("files", {}).items():
            self.store.delete(self._name(f"{section['prefix']}/{file}"), entry["generation"])

    def _sweep(self, current: dict) -> None:
        """Delete unlisted data objects (a killed writer's) older than DEBRIS_AGE_S; younger
        ones may be a live writer's, which its own precondition will stop. Retired versions
        the record still lists are kept."""
        keep = {current[PUBLISHED]["prefix"], *(r["prefix"] for r in current.get(RETIRED, []))}
        now = time.time()
        for info in self.store.list(f"{self.rel}/{DATA}/"):
            token = info.name[len(self.rel) + len(DATA) + 2 :].split("/", 1)[0]
            parts = token.split("-")
            started = int(parts[-2]) if len(parts) >= 3 and parts[-2].isdigit() else 0
            if f"{DATA}/{token}" not in keep and now - started > DEBRIS_AGE_S:
                self.store.delete(info.name, info.generation)

    def delete(self) -> bool:
        """Remove the artifact: the record first (readers stop trusting it), then its data,
        then the local copy."""
        self._check_writable()
        record, generation = self.read()
        here = unpublish(self.local) if self.local is not None else False
        if not record:
            return here
        self.store.delete(self._name(self.record_name), str(generation))
        self._delete_listed(record)
        for old in record.get(RETIRED, []):
            self._delete_section(old)
        return True

    # -- reading --------------------------------------------------------------------------

    def blob(self, record: dict, file: str) -> BlobInfo:
        """The data object of ``file`` as ``record`` lists it."""
        section = record[PUBLISHED]
        entry = section["files"][file]
        return BlobInfo(
            self._name(f"{section['prefix']}/{file}"),
            int(entry["size"]),
            entry["crc32c"],
            str(entry["generation"]),
        )

    def download(self, record: dict, dest: Path, stats: DownloadStats | None = None) -> None:
        """Every file of ``record`` into ``dest``, in parallel, then :data:`VERIFIED` (each
        file's size and mtime when its crc32c was last checked), then the record, last.

        A file already there is kept only when it is exactly as verified (same size and
        mtime) or, if it changed or was never verified, when its crc32c matches the record;
        otherwise it is downloaded again (a flipped byte, a truncated or planted file is
        repaired, not served). Partial ``.part`` files are resumed.

        Raises:
            SourceMissingError: an object is gone (the artifact was replaced meanwhile).
        """
        stats = stats or DownloadStats()
        files = record.get(PUBLISHED, {}).get("files", {})
        stamps = read_json(dest / VERIFIED)

        def fetch(file: str) -> tuple[str, list[int]]:
            target = inside(dest, file, subject=self.url, what="record entry")
            blob = self.blob(record, file)
            if target.is_file():
                if stamps.get(file) == _stamp(target):
                    return file, stamps[file]
                if target.stat().st_size == blob.size and file_crc32c(target) == blob.crc32c:
                    return file, _stamp(target)
                stats.rejected_corrupt += 1
                log.warning("%s differs from %s; downloading it again", target, self.url)
            target.parent.mkdir(parents=True, exist_ok=True)
            self.store.download(blob, target, stats)
            return file, _stamp(target)

        with ThreadPoolExecutor(TRANSFER_THREADS) as pool:
            verified = dict(pool.map(fetch, sorted(files)))
        (dest / self.record_name).parent.mkdir(parents=True, exist_ok=True)
        write_json(dest / VERIFIED, verified)
        write_json(dest / self.record_name, record)

    def changed_files(self, record: dict, folder: Path) -> list[str]:
        """The files of ``record`` in ``folder`` that are missing, or whose size or mtime is
        not what it was when their crc32c was verified (a stat each; no byte is read)."""
        stamps = read_json(folder / VERIFIED)
        changed = []
        for file in record.get(PUBLISHED, {}).get("files", {}):
            try:
                same = stamps.get(file) == _stamp(folder / file)
            except FileNotFoundError:
                same = False
            if not same:
                changed.append(file)
        return changed

    def corrupt_files(self, record: dict, folder: Path) -> list[str]:
        """The files of ``record`` in ``folder`` whose size or crc32c is not the record's
        (every byte is read: what a flipped byte with its mtime kept needs)."""
        bad = []
        for file in sorted(record.get(PUBLISHED, {}).get("files", {})):
            blob, path = self.blob(record, file), folder / file
            try:
                same = path.stat().st_size == blob.size and file_crc32c(path) == blob.crc32c
            except FileNotFoundError:
                same = False
            if not same:
                bad.append(file)
        return bad

    def pull(self, folder: Path, record: dict) -> None:
        """Make the local ``folder`` hold ``record``'s version (downloaded aside, swapped in).
        The caller holds the folder's write lock."""
        with staged(folder) as tmp:
            self.download(record, tmp)
        log.info("pulled %s (version %s) into %s", self.url, record.get("version"), folder)
