"""Write a LeRobot v3 dataset from TED episodes with lerobot's own writer, on every core.

lerobot's writer (``LeRobotDataset.create``, ``save_episode``, ``finalize``) writes the parquet
files, the statistics and the metadata, one episode after the other. For each episode we hand it
the buffer ``add_frame`` would have built, whose PNG files worker processes (:mod:`png_writer`)
have written a few episodes ahead; lerobot embeds them in batches. Both rely on lerobot
internals, checked in :mod:`lerobot_compat`; other lerobot versions get the plain per-frame
path (:mod:`per_frame`), which writes the same dataset byte for byte. An export is one artifact
of the incremental rule: built in a staging folder, published at the end, kept as it is when
its request and the TEDs it reads are unchanged.
"""

from __future__ import annotations

import logging
import shutil
from collections import deque
from contextlib import nullcontext
from dataclasses import asdict
from pathlib import Path

from episode_warehouse.errors import ExportError
from episode_warehouse.export import croissant, lerobot_compat
from episode_warehouse.export.episodes import ExportEpisode, create_dataset, export_episodes
from episode_warehouse.export.frames import frame_paths, png_jobs, scratch_bytes, scratch_root
from episode_warehouse.export.png_writer import PngWriters
from episode_warehouse.export.record import ExportRecord
from episode_warehouse.export.request import ExportRequest, check_export_name
from episode_warehouse.export.schema import ExportSchema, schema_of
from episode_warehouse.incremental import Built, build_if_changed, published, published_version
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.progress import progress
from episode_warehouse.storage import Root

log = logging.getLogger(__name__)
# an input of every export: lerobot's dataset format and our layout of it (bump on change)
EXPORT_FORMAT = "lerobot-v3.0/warehouse-export-v3"  # v2: meta/croissant.json; v3: ports, state
SELECTION_MANIFEST = "meta/warehouse_selection.json"  # Selection.load reads it back
CROISSANT_FILE = croissant.FILE_NAME  # Croissant JSON-LD at the root (docs/curation.md)


def _check_first_frame(episode: ExportEpisode, schema: ExportSchema, dataset, columns) -> None:
    """lerobot's own check of a frame against the features, on the episode's first frame."""
    from lerobot.datasets.feature_utils import validate_frame

    first = schema.images(episode, episode.steps()[:1])
    frame = {k: v[0] for k, v in {**columns, **first}.items()}
    validate_frame({**frame, "task": episode.task}, dataset.meta.features)


def _write_dataset(
    request: ExportRequest, root: Root, out: Path, writers: PngWriters, scratch_dir: Path | None
) -> int:
    """Write ``request``'s episodes of ``root`` as a LeRobot dataset at ``out``; return frames
    written."""
    episodes = export_episodes(root.reader(), list(request.episodes))
    schema = schema_of(episodes[0], request.video)
    dataset = create_dataset(request.repo_id, schema, out, request.video)
    features = dataset.meta.features
    need = scratch_bytes(episodes, features, ahead=writers.count + 2)
    scratch = scratch_root(out, request.video, need, scratch_dir)
    pending: deque[tuple[list[dict], list]] = deque()

    def submit(index: int) -> None:
        jobs = png_jobs(episodes[index], index, scratch, schema)
        pending.append((jobs, [writers.submit(job) for job in jobs]))

    try:
        ahead = writers.count + 1
        for index in range(min(ahead, len(episodes))):
            submit(index)
        with progress(f"exporting {request.name}", total=len(episodes), unit="episodes") as bar:
            for index, episode in enumerate(episodes):
                jobs, futures = pending.popleft()
                if index + ahead < len(episodes):
                    submit(index + ahead)
                columns = schema.columns(episode)
                if index == 0:
                    _check_first_frame(episode, schema, dataset, columns)
                writers.finish(jobs, futures)
                buffer = lerobot_compat.episode_buffer(
                    features,
                    episode_index=index,
                    fps=dataset.meta.fps,
                    task=episode.task,
                    columns=columns,
                    image_paths=frame_paths(jobs, episode.length),
                )
                dataset.save_episode(episode_data=buffer)
                if not request.video:  # lerobot deletes frames that became video itself
                    for folder in {job["dir"] for job in jobs}:
                        shutil.rmtree(folder, ignore_errors=True)
                bar.update(1)
        dataset.finalize()
    finally:
        if scratch != out:
            shutil.rmtree(scratch, ignore_errors=True)
    shutil.rmtree(out / "images", ignore_errors=True)  # empty frame folders of video episodes
    return sum(e.length for e in episodes)


def _source_license(layout: WarehouseLayout, keys: list[tuple[str, str]]) -> str | None:
    """The licence every source partition states alike, or None."""
    from episode_warehouse.records import RawRecord

    stated = {
        getattr(published(layout.root, layout.raw_dir(s, p), RawRecord), "license", None)
        for s, p in keys
    }
    return stated.pop() if len(stated) == 1 else None


def _write_croissant(request: ExportRequest, layout: WarehouseLayout, staging: Path) -> None:
    keys = sorted({(e[0], e[1]) for e in request.episodes})
    described = croissant.Described(
        name=request.name,
        description=f"A LeRobot v3.0 dataset exported by the episode warehouse: "
        f"{len(request.episodes)} episodes.",
        sources=keys,
        sql=request.query or "",
        license=_source_license(layout, keys),
    )
    document = croissant.export_document(staging, described)
    croissant.write_document(document, staging / CROISSANT_FILE)


def export_lerobot(
    request: ExportRequest,
    target: Path,
    *,
    root: Root | None = None,
    workers: int = 1,
    batched_embedding: bool = True,
    scratch_dir: Path | None = None,
    code_version: str = "1",
) -> Built[ExportRecord]:
    """Export ``request`` to ``target`` (a LeRobot dataset root); returns what was published
    (``.meta`` is the export's record, ``.rebuilt`` whether it was written now).

    ``root`` is the warehouse root the TEDs and ``target`` belong to (``WarehouseLayout.root``;
    a bucket root publishes the export to its bucket); without it, ``request.root`` is a local
    root and ``target`` a plain folder.

    ``workers`` processes write the PNG frames while this one feeds lerobot's writer;
    ``batched_embedding=False`` leaves lerobot's row-by-row embedding in place (to measure it);
    ``scratch_dir`` is where PNG frames wait for lerobot (default: ``/dev/shm`` when it has
    room, else the staging folder). Idempotent: a target holding the same export (same
    episodes, mode, query and TED versions) is kept.

    Raises:
        ExportError: no episode, or mixed sources.
        ForeignArtifactError: the target holds a dataset this warehouse did not write.
    """
    check_export_name(request.name)
    if not request.episodes:
        raise ExportError(
            "nothing to export: the selection has no episode",
            subject=request.name,
            fix="loosen the selection",
        )
    if len({e[0] for e in request.episodes}) > 1:
        raise ExportError(
            "a LeRobot dataset holds one source's features; the selection mixes sources",
            subject=request.name,
            fix="export each source separately",
        )
    from episode_warehouse.loading.selection import Selection

    layout = WarehouseLayout(root) if root is not None else WarehouseLayout.local(request.root)
    selection = Selection.from_rows(  # the rows match their TEDs
        list(request.episodes), layout, query=request.query
    )
    teds = {
        f"{s}:{p}": published_version(layout.root, layout.ted_dir(s, p))
        for s, p in sorted({(e[0], e[1]) for e in request.episodes})
    }
    inputs = {
        "request": request.fingerprint(),
        "teds": teds,
        "code_version": code_version,
        "format": EXPORT_FORMAT,
    }

    def build(staging: Path) -> ExportRecord:
        if lerobot_compat.fast_path_available():
            embedding = (
                lerobot_compat.batched_image_embedding() if batched_embedding else nullcontext()
            )
            with PngWriters(workers) as writers, embedding:
                frames = _write_dataset(request, layout.root, staging, writers, scratch_dir)
        else:
            from episode_warehouse.export.per_frame import write_per_frame

            rows = list(request.episodes)
            frames = write_per_frame(
                request.repo_id, layout.root.reader(), rows, staging, video=request.video
            )
        selection.save(staging / SELECTION_MANIFEST)  # what trained on it can pin it again
        _write_croissant(request, layout, staging)
        return ExportRecord(
            name=request.name,
            frames=frames,
            episodes=len(request.episodes),
            request={k: v for k, v in asdict(request).items() if k != "episodes"},
            episode_list=[list(e) for e in request.episodes],
        )

    upstream = {layout.ted_dir(s, p): teds[f"{s}:{p}"] or ""
                for s, p in sorted({(e[0], e[1]) for e in request.episodes})}  # fmt: skip
    built = build_if_changed(layout.root, Path(target), inputs, build, record_type=ExportRecord,
                             upstream=upstream)  # fmt: skip
    if built.rebuilt:
        log.info(
            "exported %d episodes (%d frames) to %s", built.meta.episodes, built.meta.frames, target
        )
    return built
