"""The one mirror of every source whose raw stage is a set of files from a blob store: unchanged
files (size, generation, crc32c as the published record holds them) are hard-linked from the
published version, the others downloaded (resumable, checksummed) into the staging folder."""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from episode_warehouse.atomic import link_or_copy
from episode_warehouse.blobstore import BlobInfo, BlobStore, DownloadStats
from episode_warehouse.guards.names import inside
from episode_warehouse.incremental import Built, build_if_changed, published
from episode_warehouse.progress import progress
from episode_warehouse.records import RawRecord
from episode_warehouse.storage import Root


@dataclass
class MirrorReport:
    """What a mirror pass did (for the asset's metadata)."""

    downloaded: list[str] = field(default_factory=list)
    linked: list[str] = field(default_factory=list)
    stats: DownloadStats = field(default_factory=DownloadStats)
    seconds: float = 0.0


def mirror_files(
    store: BlobStore,
    wanted: dict[str, BlobInfo],
    target: Path,
    staging: Path,
    report: MirrorReport,
    *,
    root: Root,
    subdir: str,
    workers: int = 4,
) -> dict[str, dict]:
    """Fill ``staging/subdir`` with ``wanted``: links to unchanged published files, downloads
    of the rest. Returns the verified entries (size, generation, crc32c) by file name.

    Shared by every source whose raw stage is a set of files from a blob store.
    """
    record = published(root, target, RawRecord)
    old = record.files if record is not None else {}
    folder = staging / subdir
    folder.mkdir(parents=True, exist_ok=True)
    partial = target.parent / f".partial-{target.name}"
    files: dict[str, dict] = {}
    todo: list[tuple[str, BlobInfo]] = []
    for name, blob in wanted.items():
        staged_path = inside(folder, name, subject=store.url)
        current = target / subdir / name
        entry = old.get(name, {})
        unchanged = (
            entry.get("size") == blob.size
            and entry.get("generation") == blob.generation
            and (not blob.crc32c or entry.get("crc32c") == blob.crc32c)
        )
        staged_path.parent.mkdir(parents=True, exist_ok=True)  # names may hold folders
        if unchanged and current.is_file():
            link_or_copy(current, staged_path)
            files[name] = entry
            report.linked.append(name)
        else:
            todo.append((name, blob))

    def fetch(item: tuple[str, BlobInfo]) -> tuple[str, str]:
        name, blob = item
        part = inside(partial, f"{name}.{blob.generation}.part", subject=store.url)
        return name, store.download(blob, folder / name, report.stats, part)

    megabytes = sum(b.size for _, b in todo) / 1e6
    with (
        progress(f"downloading {len(todo)} files ({megabytes:,.1f} MB)", len(todo), "files") as bar,
        ThreadPoolExecutor(max_workers=max(1, workers)) as pool,
    ):
        for name, crc in pool.map(fetch, todo):
            files[name] = {**wanted[name].to_json(), "crc32c": crc}
            report.downloaded.append(name)
            bar.update()
    shutil.rmtree(partial, ignore_errors=True)
    return dict(sorted(files.items()))


def mirror_listed(
    store: BlobStore,
    prefix: str,
    wanted: dict[str, BlobInfo],
    target: Path,
    *,
    root: Root,
    code_version: str,
    record_format: str,
    workers: int = 4,
    revision: str | None = None,
    license: str | None = None,
) -> tuple[Built[RawRecord], MirrorReport]:
    """The raw stage of a dataset that is the files ``wanted`` under ``prefix`` of ``store``:
    rebuilt when the listing (names, sizes, generations) or the code changed, unchanged files
    linked (:func:`mirror_files`). The record says where they came from (``store.location``)
    and, where the source has them, its commit (``revision``) and ``license``."""
    source_url = store.location(prefix)
    inputs = {
        "source_url": source_url,
        "files": {name: blob.to_json() for name, blob in wanted.items()},
        "code_version": code_version,
        "format": f"{record_format}/v1",  # the record's format: a new one rebuilds the folder
    }
    report = MirrorReport()

    def build(staging: Path) -> RawRecord:
        files = mirror_files(
            store, wanted, target, staging, report, root=root, subdir=".", workers=workers
        )
        return RawRecord(
            format=record_format,
            source_url=source_url,
            files=files,
            revision=revision or None,
            license=license or None,
        )

    return build_if_changed(root, target, inputs, build, record_type=RawRecord), report
