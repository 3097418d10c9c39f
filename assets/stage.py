"""Publishing a stage's folder: lock, skip when up to date, build aside, rename into place."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from episode_warehouse.atomic import staged, write_lock
from episode_warehouse.errors import NotMaterializedError


def published_meta(target: Path) -> dict:
    path = target / "meta.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def build_stage(target: Path, built_from: dict, build: Callable[[Path], dict]) -> tuple[dict, bool]:
    """Run ``build(staging_folder) -> meta`` and publish it at ``target``.

    Idempotent: when the published meta.json records the same ``built_from`` (input versions
    and code version), nothing is rebuilt. Returns (meta, rebuilt).
    """
    with write_lock(target):
        meta = published_meta(target)
        if meta.get("built_from") == built_from:
            return meta, False
        with staged(target) as tmp:
            meta = build(tmp)
            meta_path = tmp / "meta.json"
            full = json.loads(meta_path.read_text())
            full["built_from"] = built_from
            meta_path.write_text(json.dumps(full, indent=1, sort_keys=True))
        return full, True


@dataclass(frozen=True)
class RawInputs:
    """A raw folder's manifest, and what a decoding stage records about it."""

    folder: Path
    manifest: dict
    built_from: dict
    lineage: dict


def raw_inputs(
    layout, source: str, key: str, read_manifest, code_version: str, raw_asset: str
) -> RawInputs:
    """The published manifest of a partition's raw stage, or a clear error when there is none.

    Raises:
        NotMaterializedError: the raw stage of this partition has not been materialized.
    """
    folder = layout.raw_dir(source, key)
    manifest = read_manifest(folder)
    if not manifest:
        raise NotMaterializedError(
            "the raw files are not there yet",
            subject=str(folder),
            fix=f"materialize {raw_asset} for {key} first",
        )
    version = manifest["source_version"]
    return RawInputs(
        folder,
        manifest,
        {"source_version": version, "code_version": code_version},
        {
            "source": source,
            "partition": key,
            "source_url": manifest["source_url"],
            "source_version": version,
        },
    )
