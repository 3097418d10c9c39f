"""Mirror one run's checkpoint files from a blob store into the warehouse, incrementally.

The raw folder holds the chosen checkpoint files and ``manifest.json`` (written last). A file
already present whose manifest entry matches the source's (size, crc32c, generation) is not
downloaded again, so re-running an up-to-date partition transfers nothing.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from episode_warehouse.atari.dopamine_files import ELEMENTS, CheckpointSubset, parse_file_name
from episode_warehouse.blobstore import PART_SUFFIX, BlobInfo, BlobStore, DownloadStats
from episode_warehouse.errors import CorruptInputError, SourceUnavailableError

log = logging.getLogger(__name__)
MANIFEST = "manifest.json"
REPLAY_LOGS = "replay_logs"


@dataclass
class MirrorReport:
    """What a mirror pass did; ``manifest`` is what it published."""

    manifest: dict
    downloaded: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    stats: DownloadStats = field(default_factory=DownloadStats)
    seconds: float = 0.0


def list_run(store: BlobStore, game: str, run: int) -> dict[int, dict[str, BlobInfo]]:
    """The checkpoint files of one run in the store, by suffix and element."""
    prefix = f"{game}/{run}/{REPLAY_LOGS}/"
    found: dict[int, dict[str, BlobInfo]] = {}
    for blob in store.list(prefix):
        parsed = parse_file_name(blob.name)
        if parsed:
            element, suffix = parsed
            found.setdefault(suffix, {})[element] = blob
    return found


def source_version(files: dict[str, dict]) -> str:
    """A short hash of the names, generations and crc32c of the mirrored files."""
    text = json.dumps({k: [v["generation"], v["crc32c"]] for k, v in sorted(files.items())})
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def mirror_run(
    store: BlobStore, game: str, run: int, dest: Path, subset: CheckpointSubset, *, workers: int = 4
) -> MirrorReport:
    """Bring ``dest`` (a run's raw folder) in line with the chosen checkpoints of the source.

    Raises:
        SourceUnavailableError: the run has no checkpoint files in the source.
        CorruptInputError: a chosen checkpoint lacks one of its six files.
    """
    started = time.perf_counter()
    listing = list_run(store, game, run)
    if not listing:
        raise SourceUnavailableError(
            f"no checkpoint files under {game}/{run}/{REPLAY_LOGS}/",
            subject=store.url,
            fix="check ATARI_REPLAY_URL: below it the layout must be "
            "<Game>/<run>/replay_logs/$store$_observation_ckpt.0.gz ...",
        )
    chosen = subset.select(sorted(listing))
    wanted: dict[str, BlobInfo] = {}
    for suffix in chosen:
        missing = [e for e in ELEMENTS if e not in listing[suffix]]
        if missing:
            from episode_warehouse.atari.dopamine_files import file_name

            raise CorruptInputError(
                f"checkpoint {suffix} lacks {', '.join(file_name(e, suffix) for e in missing)}",
                subject=f"{store.url}/{game}/{run}/{REPLAY_LOGS}/",
                fix=f"upload the missing file(s) or leave checkpoint {suffix} out of the subset",
            )
        for blob in listing[suffix].values():
            wanted[blob.name.rsplit("/", 1)[-1]] = blob

    folder = dest / REPLAY_LOGS
    folder.mkdir(parents=True, exist_ok=True)
    old = _read_manifest(dest)
    report = MirrorReport(manifest={})
    todo = []
    for name, blob in sorted(wanted.items()):
        if (folder / name).is_file() and old.get(name) == blob.to_json():
            report.skipped.append(name)
        else:
            todo.append((name, blob))
    if todo:
        log.info(
            "downloading %d of %d files (%.1f MB)",
            len(todo),
            len(wanted),
            sum(b.size for _, b in todo) / 1e6,
        )

    def fetch(item: tuple[str, BlobInfo]) -> str:
        name, blob = item
        store.download(blob, folder / name, report.stats)
        return name

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        for i, name in enumerate(pool.map(fetch, todo), 1):
            report.downloaded.append(name)
            log.info("downloaded %s (%d/%d)", name, i, len(todo))
    for path in folder.iterdir():
        if path.name not in wanted and not path.name.endswith(PART_SUFFIX):
            path.unlink()
            report.removed.append(path.name)
    files = {name: blob.to_json() for name, blob in sorted(wanted.items())}
    report.manifest = {
        "source_url": f"{store.url}/{game}/{run}/{REPLAY_LOGS}",
        "subset": subset.spec,
        "suffixes": chosen,
        "files": files,
        "source_version": source_version(files),
    }
    tmp = dest / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(report.manifest, indent=1, sort_keys=True))
    os.replace(tmp, dest / MANIFEST)
    report.seconds = time.perf_counter() - started
    return report


def _read_manifest(dest: Path) -> dict:
    path = dest / MANIFEST
    if not path.is_file():
        return {}
    return json.loads(path.read_text()).get("files", {})


def read_manifest(dest: Path) -> dict:
    """The published manifest of a raw folder, or {} when there is none."""
    path = dest / MANIFEST
    return json.loads(path.read_text()) if path.is_file() else {}
