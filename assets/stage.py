"""Publishing a stage's folder: lock, skip when up to date, build aside, rename into place."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from episode_warehouse.atomic import staged, write_lock


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
