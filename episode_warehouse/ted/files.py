"""A TED's files: its record (``meta.json``), checked for format and version, and the names
of the files it reads, each checked to be a published file of its own version. Every reader
(memory-mapped, by byte ranges, the TED check) starts here."""

from __future__ import annotations

import json
from pathlib import Path

from episode_warehouse.errors import CorruptInputError, NotMaterializedError
from episode_warehouse.frames.rows import offsets_file
from episode_warehouse.guards.names import name_problem
from episode_warehouse.records import RECORD
from episode_warehouse.ted.layout import EPISODES, ZEROS
from episode_warehouse.ted.record import TedRecord


def read_meta(folder: Path) -> TedRecord:
    """The TED record of ``folder``, checked for format and version."""
    meta_path = Path(folder) / RECORD
    if not meta_path.is_file():
        raise NotMaterializedError(
            "no TED here (meta.json is missing)",
            subject=str(folder),
            fix="materialize the ted stage of this partition, e.g. "
            "'warehouse materialize atari Pong/5 --through ted'",
        )
    meta = checked_record(json.loads(meta_path.read_text()), str(meta_path))
    folder = Path(folder)
    check_named_files(meta, lambda name: (folder / name).is_file(), str(meta_path))
    return meta


def checked_record(data: object, subject: str) -> TedRecord:
    """``data`` as a TED record of this format version.

    Raises:
        FormatVersionError: a TED of another format version.
        CorruptInputError: a field missing or of another type.
    """
    return TedRecord.from_json_checked(
        data, subject=subject, fix="re-materialize the ted stage with this warehouse version"
    )


def named_files(meta: TedRecord) -> list[str]:
    """Every file name a TED record gives: each key's file and final file, an encoded
    camera's offsets and video files, the episodes table."""
    names = {EPISODES, "next/done.npy"}
    for entry in meta.keys.values():
        for field in ("file", "final"):
            if field in entry:
                names.add(entry[field])
        if "frames" in entry:
            names.add(offsets_file(entry["file"]))
            names.update(entry["frames"].get("videos", []))
            if "checksums" in entry["frames"]:
                names.add(entry["frames"]["checksums"])
    return sorted(str(n) for n in names)


def check_named_files(meta: TedRecord, listed, subject: str) -> None:
    """Refuse a record naming any file that is not a relative name of its own version
    (``listed(name)``: the artifact's :meth:`~episode_warehouse.storage.Artifact.lists`): a
    record is written by whoever can write the root, and an absolute name or one with ``..``
    would make a reader open any file of this machine.

    Raises:
        CorruptInputError: naming the record and the name.
    """
    for name in named_files(meta):
        problem = name_problem(name)
        if problem is None and not listed(name):
            problem = "it is not a file of this version (not listed as published)"
        if problem is not None:
            raise CorruptInputError(
                f"the TED record names the file {name!r}: {problem}",
                subject=subject,
                fix="re-materialize the ted stage of this partition (the record was altered)",
            )


def final_files_of(meta: TedRecord) -> list[str]:
    """The per-episode files of final observations a TED's keys read (one row per episode)."""
    return sorted({e["final"] for e in meta.keys.values() if "final" in e})


def files_of(meta: TedRecord) -> list[str]:
    """The per-step files a TED's keys read (an encoded camera's frame file; its offsets are
    :func:`frame_files`' business)."""
    steps = {"next/done.npy"}
    for entry in meta.keys.values():
        if entry["kind"] != ZEROS:
            steps.add(entry["file"])
    return sorted(steps)


def checksum_files(meta: TedRecord) -> dict[str, str]:
    """Encoded camera's frame file -> its checksums file (TEDs written before #69 have none)."""
    return {
        e["file"]: e["frames"]["checksums"]
        for e in meta.keys.values()
        if "frames" in e and "checksums" in e["frames"]
    }


def frame_files(meta: TedRecord) -> dict[str, tuple[tuple[int, ...], str, list[str]]]:
    """The TED's cameras stored encoded: frame file -> (row shape, dtype, a video camera's
    files relative to the TED folder)."""
    return {
        e["file"]: (
            tuple(e["frames"]["shape"]),
            e["frames"]["dtype"],
            e["frames"].get("videos", []),
        )
        for e in meta.keys.values()
        if "frames" in e
    }
