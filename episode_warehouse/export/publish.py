"""Publish a LeRobot export to the hub: the export's files and a generated dataset card, in
one commit (:func:`~episode_warehouse.hub.publish.publish_folder`), then lerobot's
codebase-version tag on it, as lerobot's ``push_to_hub`` sets it (``LeRobotDataset(repo_id)``
reads that tag).

With a ``gs://`` root the export's published version is first checked out into the scratch
folder (:func:`~episode_warehouse.incremental.checkout`).
"""

from __future__ import annotations

import logging
from pathlib import Path

from episode_warehouse.atomic import read_json
from episode_warehouse.catalog import run_query
from episode_warehouse.errors import NotMaterializedError
from episode_warehouse.export.card import SourcePartition, dataset_card
from episode_warehouse.export.record import ExportRecord
from episode_warehouse.export.request import check_export_name
from episode_warehouse.hub.client import HubClient
from episode_warehouse.hub.publish import Published, publish_folder
from episode_warehouse.hub.url import HubUrl
from episode_warehouse.incremental import checkout, published
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.records import RawRecord
from episode_warehouse.sources.lerobot.dataset import CODEBASE_VERSION
from episode_warehouse.storage.base import WORKING_NOTES

log = logging.getLogger(__name__)


def source_partitions(layout: WarehouseLayout, export: ExportRecord) -> list[SourcePartition]:
    """The partitions ``export`` read, with their TED versions (as exported), from the catalog
    where their source files were read and their sizes, and from their raw records the
    license their source states (LeRobot datasets on the hub: their card's)."""
    teds: dict[str, str] = export.inputs["teds"]
    keys = [tuple(k.split(":", 1)) for k in sorted(teds)]
    found: dict[tuple[str, str], tuple] = {}
    if keys:
        where = " OR ".join(["(source = ? AND partition = ?)"] * len(keys))
        _, rows = run_query(
            layout.root,
            f"SELECT source, partition, source_url, episodes, frames FROM partitions WHERE {where}",
            [x for k in keys for x in k],
        )
        found = {(r[0], r[1]): r for r in rows}
    out = []
    for source, partition in keys:
        row = found.get((source, partition), (source, partition, "", 0, 0))
        raw = published(layout.root, layout.raw_dir(source, partition), RawRecord)
        out.append(
            SourcePartition(
                source,
                partition,
                teds[f"{source}:{partition}"],
                row[2] or "",
                row[3],
                row[4],
                license=raw.license if raw is not None else None,
            )
        )
    return out


def publish_export(
    layout: WarehouseLayout,
    name: str,
    target: HubUrl,
    *,
    client: HubClient | None = None,
    private: bool = False,
    license: str | None = None,
) -> Published:
    """Push export ``name`` of ``layout`` to ``target`` (``hf://datasets/OWNER/NAME[@BRANCH]``).

    Raises:
        NotMaterializedError: no export of that name has been published in this warehouse.
        ConfigError: a bad target, a token that may not write there.
        ExportError: the branch moved while publishing.
    """
    check_export_name(name)
    folder = layout.lerobot_dir(name)
    export = checkout(layout.root, folder, ExportRecord)
    if export is None:
        raise NotMaterializedError(
            "no export of this name in the warehouse",
            subject=str(folder),
            fix=f'export it first: warehouse export {name} "SELECT source, partition, episode, '
            'start, length FROM episodes WHERE ..."',
        )
    client = client or HubClient(repo_type=target.repo_type)
    info = read_json(Path(folder) / "meta" / "info.json")
    partitions = source_partitions(layout, export)
    branch = target.revision or "main"
    card = dataset_card(
        str(target.repo_id), info, export, partitions, license=license, revision=branch
    )
    published = publish_folder(
        Path(folder),
        target,
        client=client,
        replace={"README.md": card.encode()},
        leave_out=WORKING_NOTES,  # a root's notes beside the files, not part of the export
        private=private,
        message=f"Publish {name}: {export.episodes} episodes, {export.frames} frames",
        description=f"episode-warehouse export {name}, version {export.version}",
    )
    if branch == "main":  # what LeRobotDataset(repo_id) reads, as lerobot's push_to_hub tags it
        _, tags = client.refs(str(target.repo_id))
        if tags.get(CODEBASE_VERSION) != published.commit:
            client.move_tag(str(target.repo_id), CODEBASE_VERSION, published.commit)
    return published
