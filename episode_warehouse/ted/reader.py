"""Open a published TED folder as a memory-mapped TensorDict (no copy into RAM)."""

from __future__ import annotations

import difflib
import json
import os
import warnings
from pathlib import Path

import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase

from episode_warehouse.errors import CorruptInputError, NotMaterializedError
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.records import RECORD
from episode_warehouse.ted.layout import ARRAY, NEXT_OF, UNSQUEEZE, ZEROS
from episode_warehouse.ted.next_view import NextObservation
from episode_warehouse.ted.record import TedRecord


def _map(path: Path) -> torch.Tensor:
    # mode "c": a private copy-on-write mapping; pages are read lazily, writes never reach disk.
    try:
        array = np.load(path, mmap_mode="c")
    except (OSError, ValueError) as exc:
        raise CorruptInputError(
            f"a TED array cannot be read ({exc})",
            subject=str(path),
            fix="re-materialize the ted stage of this partition",
        ) from exc
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.from_numpy(array)


NEXT_OBS = ("view", "copy")


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
    return checked_record(json.loads(meta_path.read_text()), str(meta_path))


def checked_record(data: object, subject: str) -> TedRecord:
    """``data`` as a TED record of this format version.

    Raises:
        FormatVersionError: a TED of another format version.
        CorruptInputError: a field missing or of another type.
    """
    return TedRecord.from_json_checked(
        data, subject=subject, fix="re-materialize the ted stage with this warehouse version"
    )


def final_files_of(meta: TedRecord) -> list[str]:
    """The per-episode files of final observations a TED's keys read (one row per episode)."""
    return sorted({e["final"] for e in meta.keys.values() if "final" in e})


def files_of(meta: TedRecord) -> list[str]:
    """The per-step files a TED's keys read."""
    steps = {"next/done.npy"}
    for entry in meta.keys.values():
        if entry["kind"] != ZEROS:
            steps.add(entry["file"])
    return sorted(steps)


def open_ted_folder(folder: Path, next_obs: str = "view") -> TensorDictBase:
    """Open the TED at ``folder`` (see :func:`open_ted` for the keys and ``next_obs``)."""
    folder = Path(folder)
    meta = read_meta(folder)
    mapped: dict[str, torch.Tensor] = {}

    def tensor_of(file: str) -> torch.Tensor:
        if file not in mapped:
            mapped[file] = _map(folder / file)
        return mapped[file]

    return assemble(meta, tensor_of, meta.rows, next_obs)


def assemble(meta: TedRecord, tensor_of, rows: int, next_obs: str = "view") -> TensorDictBase:
    """The TensorDict of ``rows`` steps of a TED from its record and ``tensor_of(file)``: the
    rows of each per-step file (one more row for observation files). A memory-mapped folder
    and the rows of one episode fetched from a bucket are assembled by this same code, so both
    give the same values."""
    if next_obs not in NEXT_OBS:
        raise ValueError(f"next_obs must be one of {NEXT_OBS}, not {next_obs!r}")
    leaves: dict[tuple[str, ...], torch.Tensor] = {}
    done = tensor_of("next/done.npy")
    for name, entry in meta.keys.items():
        key = tuple(name.split("/"))
        kind = entry["kind"]
        if kind == ZEROS:
            leaves[key] = torch.zeros(
                1, *entry["shape"], dtype=getattr(torch, entry["dtype"])
            ).expand(rows, *entry["shape"])
            continue
        tensor = tensor_of(entry["file"])
        if kind == ARRAY:
            leaves[key] = tensor[:rows] if entry.get("rows_plus_one") else tensor
        elif kind == UNSQUEEZE:
            leaves[key] = tensor.unsqueeze(-1)
        elif kind == NEXT_OF:
            final = tensor_of(entry["final"]) if "final" in entry else None
            episode = tensor_of("episode.npy") if final is not None else None
            view = NextObservation(tensor[1 : rows + 1], done, final, episode)
            leaves[key] = view if next_obs == "view" else view.corrected()
        else:
            raise NotMaterializedError(f"unknown key kind {kind!r}", subject="TED meta.json")
    td = TensorDict(batch_size=[rows])
    for key, value in leaves.items():
        td.set(key, value)
    return td


def open_ted(
    source: str,
    partition: str,
    root: str | os.PathLike | None = None,
    *,
    next_obs: str = "view",
) -> TensorDictBase:
    """The TED of one partition as a memory-mapped TensorDict (opens in milliseconds).

    Keys (N steps, all episodes of the partition concatenated):

    - ``observation`` and ``("next", "observation")`` (Atari: uint8 [N, 84, 84]; OpenX:
      nested ``observation/<name>``); "next" is a zero-copy shifted view, zeros on last steps
    - ``action`` (Atari int32 [N]; OpenX as in the data), plus any other per-step values
    - ``("next", "reward")`` float32 [N, 1]; ``("next", "done" | "terminated" | "truncated")``
      bool [N, 1]; root ``done``, ``terminated``, ``truncated`` bool [N, 1], all False
    - ``is_init`` bool [N] (first step of each episode), ``episode`` int32 [N]

    ``("next", "observation")`` costs nothing with ``next_obs="view"`` (the default): it is the
    same file shifted by one row, and indexing, slicing, ``torch.stack`` of slices, ``.clone()``
    of a slice and ``.to()`` to the same device cost only the rows they touch. A whole-tensor
    operation on it (``td["next", "observation"].float().mean()``, ``.to("cuda")``) allocates
    the corrected tensor first: N x frame bytes (~7 GB for a million Atari frames).
    ``next_obs="copy"`` makes that copy once, at open, as a plain tensor in memory.

    Args:
        source: ``"atari"``, ``"openx"`` or ``"lerobot"``.
        partition: e.g. ``"Pong/5"`` or ``"cmu_stretch"``.
        root: the warehouse root; defaults to ``$EPISODE_WAREHOUSE_ROOT``. With a
            ``gs://`` root the TED is downloaded once into ``$EPISODE_WAREHOUSE_CACHE``
            (default ``~/.cache/episode-warehouse``), keyed by its version.
        next_obs: ``"view"`` (zero-copy, default) or ``"copy"`` (materialized in memory).

    Raises:
        NotMaterializedError: the partition's TED has not been built.
    """
    layout = WarehouseLayout.from_root(root)
    if layout.bucket is not None:
        from episode_warehouse.ted.remote_cache import cached_ted

        layout.ted_dir(source, partition)  # validates the source and the partition key
        return open_ted_folder(cached_ted(layout.bucket, source, partition), next_obs)
    folder = layout.ted_dir(source, partition)
    if not (folder / RECORD).is_file():
        built = _built_partitions(folder.parents[len(Path(partition).parts) - 1])
        close = difflib.get_close_matches(partition, built, n=3, cutoff=0.5)
        raise NotMaterializedError(
            f"no TED of {source} {partition!r} in this warehouse"
            + (f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else "")
            + (
                f"; built: {', '.join(built[:8])}{' ...' if len(built) > 8 else ''}"
                if built
                else ""
            ),
            subject=str(folder),
            fix=f"materialize it: warehouse materialize {source} {partition} --through ted "
            "(or pass root= the warehouse that holds it)",
        )
    return open_ted_folder(folder, next_obs)


def _built_partitions(source_dir: Path) -> list[str]:
    """The partition keys of ``ted/<source>/`` that have a published TED."""
    if not source_dir.is_dir():
        return []
    return sorted(
        meta.parent.relative_to(source_dir).as_posix()
        for meta in source_dir.rglob(RECORD)
        if not any(part.startswith(".") for part in meta.relative_to(source_dir).parts)
    )
