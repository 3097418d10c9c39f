"""Mirror one Atari run's files from a blob store into the warehouse, in either layout.

Two layouts of the DQN Replay data exist: Dopamine's checkpoints
(``<Game>/<run>/replay_logs/$store$_observation_ckpt.<i>.gz`` ...; the original bucket is
gone) and the RL Unplugged copy in episode order (``<Game>/run_<run>-<i>-of-<n>``, GZIP-ed
TFRecord files). :func:`detect_layout` tells them apart from the listing (``ATARI_FORMAT``
overrides it).

The raw folder (``<root>/raw/atari/<Game>/<run>/``) holds ``replay_logs/<files>`` (Dopamine)
or ``rlu/<files>`` (RL Unplugged) and ``meta.json``; it is one artifact of the incremental rule
(``episode_warehouse.incremental``): its inputs are the source's listing of the chosen files
(size, generation, crc32c), the mode and the code version. In ``streaming`` mode (RL Unplugged
only) the record lists the files and nothing is copied: the decoder reads the bucket.

A new version is built aside: files whose listing entry did not change are hard-linked from the
published version (no byte is transferred), the others are downloaded (resumable: partial files
live in ``.partial-<run>/`` beside the folder and survive a failure), and the folder is swapped
in atomically. A decoder holds the folder's readers lock, so a re-mirror never
replaces files under it.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from episode_warehouse.blobstore import BlobInfo, BlobStore
from episode_warehouse.errors import ConfigError, CorruptInputError, SourceMissingError
from episode_warehouse.incremental import Built, build_if_changed
from episode_warehouse.sources.atari.dopamine_files import (
    ELEMENTS,
    CheckpointSubset,
    file_name,
    parse_file_name,
)
from episode_warehouse.sources.atari.record import DOPAMINE_FORMAT, RLU_FORMAT, AtariRawRecord
from episode_warehouse.sources.atari.rlu_files import RLU_GAMES, list_rlu_run
from episode_warehouse.sources.mirror import MirrorReport, mirror_files
from episode_warehouse.storage import Root

log = logging.getLogger(__name__)
REPLAY_LOGS = "replay_logs"
RLU = "rlu"
LAYOUTS = ("auto", "dopamine", "rlu")
MODES = ("download", "streaming")
_BOTH = (
    "<Game>/<run>/replay_logs/$store$_observation_ckpt.0.gz ... (Dopamine) or "
    "<Game>/run_<run>-00000-of-00050 ... (RL Unplugged)"
)


def list_run(store: BlobStore, game: str, run: int) -> dict[int, dict[str, BlobInfo]]:
    """The checkpoint files of one run in the store, by suffix and element.

    Raises:
        CorruptInputError: two files name the same element of the same checkpoint
            (``action_ckpt.1.gz`` beside ``$store$_action_ckpt.1.gz``).
    """
    prefix = f"{game}/{run}/{REPLAY_LOGS}/"
    found: dict[int, dict[str, BlobInfo]] = {}
    for blob in store.list(prefix):
        parsed = parse_file_name(blob.name)
        if not parsed:
            continue
        element, suffix = parsed
        other = found.setdefault(suffix, {}).get(element)
        if other is not None:
            raise CorruptInputError(
                f"two files hold the {element} of checkpoint {suffix}: "
                f"{other.name.rsplit('/', 1)[-1]} and {blob.name.rsplit('/', 1)[-1]}",
                subject=f"{store.url}/{prefix}",
                fix=f"keep only {file_name(element, suffix)} in the source",
            )
        found[suffix][element] = blob
    return found


def chosen_files(
    store: BlobStore, game: str, run: int, subset: CheckpointSubset
) -> tuple[list[int], dict[str, BlobInfo]]:
    """The checkpoint suffixes of ``subset`` and their files, by file name.

    Raises:
        SourceMissingError: the run has no checkpoint files in the store.
        CorruptInputError: a chosen checkpoint lacks one of its six files.
    """
    listing = list_run(store, game, run)
    if not listing:
        raise SourceMissingError(
            f"no checkpoint files under {game}/{run}/{REPLAY_LOGS}/",
            subject=store.url,
            fix="check ATARI_REPLAY_URL: below it the layout must be " + _BOTH,
        )
    chosen = subset.select(sorted(listing))
    wanted: dict[str, BlobInfo] = {}
    for suffix in chosen:
        missing = [e for e in ELEMENTS if e not in listing[suffix]]
        if missing:
            raise CorruptInputError(
                f"checkpoint {suffix} lacks {', '.join(file_name(e, suffix) for e in missing)}",
                subject=f"{store.url}/{game}/{run}/{REPLAY_LOGS}/",
                fix=f"upload the missing file(s) or leave checkpoint {suffix} out of the subset",
            )
        for blob in listing[suffix].values():
            wanted[blob.name.rsplit("/", 1)[-1]] = blob
    return chosen, dict(sorted(wanted.items()))


def detect_layout(store: BlobStore, game: str, run: int, layout: str = "auto") -> str:
    """``"dopamine"`` or ``"rlu"``: ``layout`` itself, or (``auto``) the one the listing has.

    Raises:
        ConfigError: an unknown layout name, or both layouts present for this run.
        SourceMissingError: neither layout has files for this run (names both).
    """
    if layout not in LAYOUTS:
        raise ConfigError(
            f"unknown Atari format {layout!r}",
            subject="ATARI_FORMAT",
            fix="use auto, dopamine or rlu",
        )
    if layout != "auto":
        return layout
    dopamine = bool(store.list(f"{game}/{run}/{REPLAY_LOGS}/"))
    rlu = bool(list_rlu_run(store, game, run))
    if dopamine and rlu:
        raise ConfigError(
            f"both layouts hold {game}/{run}",
            subject=store.url,
            fix="set ATARI_FORMAT to dopamine or rlu",
        )
    if not dopamine and not rlu:
        hint = "" if game in RLU_GAMES else f" ({game} is not one of the 46 RL Unplugged games)"
        raise SourceMissingError(
            f"no files of {game}/{run} in either layout{hint}",
            subject=store.url,
            fix="check ATARI_REPLAY_URL; below it the layout must be " + _BOTH,
        )
    return "dopamine" if dopamine else "rlu"


def mirror_run(
    store: BlobStore,
    game: str,
    run: int,
    target: Path,
    subset: CheckpointSubset,
    *,
    root: Root,
    code_version: str,
    workers: int = 4,
    layout: str = "auto",
    mode: str = "download",
) -> tuple[Built[AtariRawRecord], MirrorReport]:
    """Bring the raw folder ``target`` of one run in line with the chosen checkpoints.

    Raises:
        SourceMissingError: the run has no files in the source (in either layout).
        CorruptInputError: a chosen Dopamine checkpoint lacks one of its six files, or two
            files hold the same element or checkpoint.
        ConfigError: an unknown layout or mode, or streaming for the Dopamine layout.
    """
    started = time.perf_counter()
    if mode not in MODES:
        raise ConfigError(
            f"unknown mode {mode!r}", subject="ATARI_MODE", fix="use download or streaming"
        )
    layout = detect_layout(store, game, run, layout)
    if layout == "dopamine":
        if mode == "streaming":
            raise ConfigError(
                "streaming reads the RL Unplugged layout only; this run is in Dopamine's",
                subject="ATARI_MODE",
                fix="set ATARI_MODE=download for Dopamine checkpoints",
            )
        chosen, wanted = chosen_files(store, game, run, subset)
        subdir, record_format, source_url = (
            REPLAY_LOGS,
            DOPAMINE_FORMAT,
            (f"{store.url}/{game}/{run}/{REPLAY_LOGS}"),
        )
    else:
        listing = list_rlu_run(store, game, run)
        chosen = subset.select(sorted(listing))
        wanted = {listing[i].name.rsplit("/", 1)[-1]: listing[i] for i in chosen}
        subdir, record_format, source_url = RLU, RLU_FORMAT, f"{store.url}/{game}"
    inputs = {
        "source_url": source_url,
        "layout": layout,
        "mode": mode,
        "subset": subset.spec,
        "suffixes": chosen,
        "files": {name: blob.to_json() for name, blob in wanted.items()},
        "code_version": code_version,
        "format": f"{record_format}/v1",  # the record's format: a new one rebuilds the folder
    }
    report = MirrorReport()

    def build(staging: Path) -> AtariRawRecord:
        if mode == "download":
            files = mirror_files(
                store, wanted, target, staging, report, root=root, subdir=subdir, workers=workers
            )
        else:
            files = {name: blob.to_json() for name, blob in wanted.items()}
        return AtariRawRecord(
            format=record_format,
            layout=layout,
            mode=mode,
            source_url=source_url,
            store_url=store.url,
            subset=subset.spec,
            suffixes=list(chosen),
            files=files,
            blobs={name: blob.name for name, blob in wanted.items()},
        )

    built = build_if_changed(root, target, inputs, build, record_type=AtariRawRecord)
    report.seconds = time.perf_counter() - started
    return built, report
