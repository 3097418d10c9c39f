"""Croissant metadata (MLCommons, JSON-LD, conformsTo croissant/1.0) for a LeRobot export and for
a partition's catalog rows (``warehouse describe``): what tools such as ``mlcroissant`` and the
Hugging Face Hub read to load a dataset.

The document names the Parquet files (a ``cr:FileSet``) and one ``cr:RecordSet`` over them
whose fields are their scalar and vector columns (a list column is a ``repeated`` field);
nested columns (image structs, lists of lists, the audit's findings) are left out of the record
set and named in its description, the files still hold them. It carries the selection's SQL,
the curation columns the SQL uses, each source partition, the source collection's citation and
the licence the sources state (``other`` with a note where they do not state one).

No value that came from outside is parsed here: names, SQL and URLs are JSON strings.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from episode_warehouse.atomic import write_user_json

CROISSANT = "http://mlcommons.org/croissant/1.0"
FILE_NAME = "croissant.json"
CONTEXT = {
    "@language": "en",
    "@vocab": "https://schema.org/",
    "citeAs": "cr:citeAs",
    "column": "cr:column",
    "conformsTo": "dct:conformsTo",
    "cr": "http://mlcommons.org/croissant/",
    "rai": "http://mlcommons.org/croissant/RAI/",
    "data": {"@id": "cr:data", "@type": "@json"},
    "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "dct": "http://purl.org/dc/terms/",
    "equivalentProperty": "cr:equivalentProperty",
    "examples": {"@id": "cr:examples", "@type": "@json"},
    "extract": "cr:extract",
    "field": "cr:field",
    "fileObject": "cr:fileObject",
    "fileProperty": "cr:fileProperty",
    "fileSet": "cr:fileSet",
    "format": "cr:format",
    "includes": "cr:includes",
    "isLiveDataset": "cr:isLiveDataset",
    "jsonPath": "cr:jsonPath",
    "key": "cr:key",
    "md5": "cr:md5",
    "parentField": "cr:parentField",
    "path": "cr:path",
    "recordSet": "cr:recordSet",
    "references": "cr:references",
    "regex": "cr:regex",
    "repeated": "cr:repeated",
    "replace": "cr:replace",
    "samplingRate": "cr:samplingRate",
    "sc": "https://schema.org/",
    "separator": "cr:separator",
    "source": "cr:source",
    "subField": "cr:subField",
    "transform": "cr:transform",
}
PARQUET = "application/x-parquet"
# the source collections' papers (each dataset's own terms and citation also apply)
CITATIONS = {
    "atari": "Agarwal, Schuurmans, Norouzi. An Optimistic Perspective on Offline Reinforcement "
    "Learning. ICML 2020 (DQN Replay; RL Unplugged: Gulcehre et al., NeurIPS 2020).",
    "openx": "Open X-Embodiment Collaboration. Open X-Embodiment: Robotic Learning Datasets and "
    "RT-X Models. ICRA 2024.",
    "lerobot": "Cadene et al. LeRobot: State-of-the-art Machine Learning for Real-World Robotics "
    "in Pytorch. 2024.",
    "minari": "Younis et al. Minari: A dataset API for Offline Reinforcement Learning. 2024.",
}
# catalog columns a selection may curate on (named in the document when its SQL uses them)
CURATION_COLUMNS = (
    "defects", "findings", "content_hash", "step_minhash", "frame_hashes", "near_duplicate_of",
    "duplicate_group", "idle_fraction", "jerk", "length_z", "return_z", "success",
    "nonidle_ranges", "nonidle_steps",
)  # fmt: skip
_SCORE = re.compile(r"\bscore_[a-z][a-z0-9_]{0,39}\b")
_ID = re.compile(r"[^A-Za-z0-9_.\-]")


@dataclass(frozen=True)
class Described:
    """What a document says besides its files: a name, a description, where its data came from
    (source, partition pairs), the selection's SQL, the licence and the URL."""

    name: str
    description: str
    sources: Sequence[tuple[str, str]]
    sql: str = ""
    license: str | None = None
    url: str = "https://github.com/episode-warehouse"
    version: str = "1.0.0"
    published: str = ""  # ISO date; default today


def curation_columns(sql: str) -> list[str]:
    """The curation columns (and ``score_<name>`` columns) a selection's SQL names."""
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", sql))
    return sorted({c for c in CURATION_COLUMNS if c in words} | set(_SCORE.findall(sql)))


def _data_type(arrow: pa.DataType) -> tuple[str, bool] | None:
    """(Croissant data type, repeated) of a column, or None for one the record set leaves out."""
    repeated = False
    if (
        pa.types.is_list(arrow)
        or pa.types.is_large_list(arrow)
        or pa.types.is_fixed_size_list(arrow)
    ):
        arrow, repeated = arrow.value_type, True
    if pa.types.is_boolean(arrow):
        return "sc:Boolean", repeated
    if pa.types.is_integer(arrow):
        return "sc:Integer", repeated
    if pa.types.is_floating(arrow):
        return "sc:Float", repeated
    if pa.types.is_string(arrow) or pa.types.is_large_string(arrow):
        return "sc:Text", repeated
    return None


def _field_id(record_set: str, column: str) -> str:
    """``record_set/column``; a column with characters an id may not hold gets them replaced
    and a hash of its name (``cam high`` and ``cam_high`` are two fields: mlcroissant refused
    the document when their ids collided)."""
    safe = _ID.sub("_", column)
    if safe != column:
        safe += "-" + hashlib.sha256(column.encode()).hexdigest()[:8]
    return f"{record_set}/{safe}"


def record_set(name: str, file_set: str, schema: pa.Schema, doc: str) -> dict:
    """A record set over ``file_set`` with one field per scalar or vector column."""
    fields, left_out = [], []
    for f in schema:
        typed = _data_type(f.type)
        if typed is None:
            left_out.append(f.name)
            continue
        data_type, repeated = typed
        entry = {
            "@type": "cr:Field",
            "@id": _field_id(name, f.name),
            "name": f.name,
            "dataType": data_type,
            "source": {"fileSet": {"@id": file_set}, "extract": {"column": f.name}},
        }
        if repeated:
            entry["repeated"] = True
        fields.append(entry)
    if left_out:
        doc += f" Columns in the files but not fields here (nested): {', '.join(left_out)}."
    return {"@type": "cr:RecordSet", "@id": name, "name": name, "description": doc,
            "field": fields}  # fmt: skip


def document(described: Described, file_sets: Iterable[dict], record_sets: Iterable[dict]) -> dict:
    """The Croissant JSON-LD document."""
    sources = sorted({s for s, _ in described.sources})
    cite = " ".join(CITATIONS[s] for s in sources if s in CITATIONS) or "See each source."
    parts = ", ".join(f"{s}/{p}" for s, p in described.sources)
    description = f"{described.description} Episodes from {parts}."
    if described.sql:
        description += f" Selected by: {described.sql}"
    used = curation_columns(described.sql)
    if used:
        description += f" Curation columns used: {', '.join(used)}."
    doc = {
        "@context": CONTEXT,
        "@type": "sc:Dataset",
        "name": described.name,
        "description": description,
        "conformsTo": CROISSANT,
        "citeAs": cite,
        "license": described.license or "other",
        "url": described.url,
        "version": described.version,
        "datePublished": described.published or date.today().isoformat(),
        "keywords": ["robotics", "reinforcement learning", "episodes", *sources],
        "distribution": list(file_sets),
        "recordSet": list(record_sets),
    }
    return doc


def file_set(name: str, includes: str, fmt: str = PARQUET) -> dict:
    return {"@type": "cr:FileSet", "@id": name, "name": name, "encodingFormat": fmt,
            "includes": includes}  # fmt: skip


def export_document(folder: Path, described: Described) -> dict:
    """The document of a LeRobot export in ``folder`` (data files ``data/*/*.parquet``, one
    row per frame; ``meta/episodes/*/*.parquet``, one row per episode)."""
    folder = Path(folder)
    data = sorted(folder.glob("data/*/*.parquet"))
    episodes = sorted(folder.glob("meta/episodes/*/*.parquet"))
    sets = [file_set("frame-files", "data/*/*.parquet")]
    frames_doc = "One record per frame (a step), as LeRobot's data files hold them."
    records = [record_set("frames", "frame-files", pq.read_schema(data[0]), frames_doc)]
    if episodes:
        sets.append(file_set("episode-files", "meta/episodes/*/*.parquet"))
        episodes_doc = "One record per episode (LeRobot's episode metadata)."
        records.append(
            record_set("episodes", "episode-files", pq.read_schema(episodes[0]), episodes_doc)
        )
    if any(folder.glob("videos/*/*/*.mp4")):
        sets.append(file_set("video-files", "videos/*/*/*.mp4", "video/mp4"))
    return document(described, sets, records)


def rows_document(rows_file: Path, described: Described) -> dict:
    """The document of a partition's catalog rows (one row per episode): the file by its
    absolute path and SHA-256 (a ``cr:FileObject``: the document may be written anywhere)."""
    rows_file = Path(rows_file).absolute()
    sha = hashlib.sha256(rows_file.read_bytes()).hexdigest()
    rows_doc = "One record per episode: the catalog's columns (docs/catalog.md)."
    schema = pq.read_schema(rows_file)
    records = [record_set("episodes", "episode-rows", schema, rows_doc)]
    for f in records[0]["field"]:
        f["source"] = {"fileObject": {"@id": "episode-rows"}, "extract": f["source"]["extract"]}
    files = [
        {"@type": "cr:FileObject", "@id": "episode-rows", "name": "episode-rows",
         "contentUrl": str(rows_file), "encodingFormat": PARQUET, "sha256": sha}
    ]  # fmt: skip
    return document(described, files, records)


def write_document(doc: dict, path: Path) -> None:
    """Write ``doc`` at ``path`` atomically (never half a document), a path the user named:
    a folder, link, pipe or device there is refused (:func:`~episode_warehouse.atomic.
    check_user_file`), never replaced."""
    write_user_json(Path(path), doc)
