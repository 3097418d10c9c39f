"""Compare two LeRobot datasets file by file: how we prove an export equals the per-frame path."""

from __future__ import annotations

from pathlib import Path

from episode_warehouse.export.lerobot import CROISSANT_FILE, SELECTION_MANIFEST
from episode_warehouse.records import EXPORT_RECORD


def differing_files(a: Path, b: Path) -> list[str]:
    """Relative paths whose contents differ between datasets ``a`` and ``b`` (or exist in one).

    Parquet files are compared as tables: values, types and the schema's metadata, except the
    ``fingerprint`` that ``datasets`` draws at random for every in-memory table it writes.
    JSON files are compared as values (lerobot orders the keys of ``stats.json`` by a set, which
    changes from process to process); every other file byte for byte. Our
    ``meta/warehouse_export.json``, ``meta/warehouse_selection.json`` and
    ``croissant.json`` are ignored.
    """
    import json

    import pyarrow.parquet as pq

    def files(root: Path) -> set[str]:
        return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()} - {
            EXPORT_RECORD,
            SELECTION_MANIFEST,
            CROISSANT_FILE,
        }

    def schema_meta(table) -> dict:
        meta = dict(table.schema.metadata or {})
        if b"huggingface" in meta:
            hf = json.loads(meta[b"huggingface"])
            hf.pop("fingerprint", None)
            meta[b"huggingface"] = hf
        return meta

    names_a, names_b = files(a), files(b)
    out = sorted(names_a ^ names_b)
    for name in sorted(names_a & names_b):
        if name.endswith(".parquet"):
            ta, tb = pq.read_table(a / name), pq.read_table(b / name)
            same = ta.equals(tb) and schema_meta(ta) == schema_meta(tb)
        elif name.endswith(".json"):
            same = json.loads((a / name).read_text()) == json.loads((b / name).read_text())
        else:
            same = (a / name).read_bytes() == (b / name).read_bytes()
        if not same:
            out.append(name)
    return out
