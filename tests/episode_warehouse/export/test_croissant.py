"""Croissant metadata (#60): MLCommons' own library validates the documents we write and loads
back exactly the rows of the files they describe (an export's frames and episodes, a
partition's catalog rows), with the selection's SQL and the curation columns it used."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from episode_warehouse.export import ExportRequest, export_lerobot
from episode_warehouse.export.croissant import curation_columns
from episode_warehouse.export.describe import describe_partition, validate
from episode_warehouse.loading import select_episodes
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.stages.curation import publish_duplicates
from tests.helpers import build_openx
from warehouse_fixtures.openx_writer import DatasetSpec

pytestmark = pytest.mark.integration  # catalog queries, mlcroissant's child

SQL = (
    "SELECT source, partition, episode, start, length FROM episodes "
    "WHERE defects = 0 AND near_duplicate_of IS NULL ORDER BY episode"
)


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("croissant") / "wh"
    # episodes of a second or more (cmu_stretch records at 10 Hz): none is short
    spec = DatasetSpec("cmu_stretch", cameras=("image",), image_size=16)
    build_openx(root, spec, [[10, 12], [11]])
    publish_duplicates(WarehouseLayout.local(root))  # near_duplicate_of: checked
    return root


def _records(path, name):
    import mlcroissant as mlc

    return list(mlc.Dataset(jsonld=str(path)).records(name))


def _same(value, want) -> bool:
    if isinstance(want, list):
        return np.allclose(np.asarray(value, np.float64), np.asarray(want, np.float64))
    if isinstance(want, float):
        return np.isclose(float(value), want)
    if isinstance(value, bytes):
        value = value.decode()
    return value == want


def test_an_exports_record_sets_are_its_rows(root, tmp_path):
    sel = select_episodes(SQL, root=root)
    rows = [tuple(r) for r in sel.rows()]
    export_lerobot(ExportRequest("stretch", str(root), rows, query=SQL), tmp_path / "out")
    path = tmp_path / "out" / "croissant.json"
    doc = json.loads(path.read_text())
    assert SQL in doc["description"] and "defects, near_duplicate_of" in doc["description"]
    assert doc["conformsTo"] == "http://mlcommons.org/croissant/1.0"
    assert "Open X-Embodiment" in doc["citeAs"] and doc["license"] == "other"

    files = sorted((tmp_path / "out").glob("data/*/*.parquet"))
    data = pa.concat_tables(pq.read_table(f) for f in files)
    frames = _records(path, "frames")
    assert len(frames) == data.num_rows == int(sel.length.sum())
    fields = [f["name"] for f in doc["recordSet"][0]["field"]]
    assert {"action", "observation.state", "episode_index", "timestamp"} <= set(fields)
    want = data.to_pylist()
    for got, row in zip(frames, want, strict=True):
        for name in fields:
            assert _same(got[f"frames/{name}"], row[name]), (name, got, row[name])
    episodes = _records(path, "episodes")
    assert len(episodes) == len(rows)
    assert validate(path, ("frames", "episodes")) == {"frames": len(frames), "episodes": len(rows)}


def test_a_partitions_description_is_its_catalog_rows(root, tmp_path):
    layout = WarehouseLayout.local(root)
    doc = describe_partition(layout, "openx", "cmu_stretch")
    path = tmp_path / "cmu.croissant.json"
    path.write_text(json.dumps(doc))
    got = _records(path, "episodes")
    rows = pq.read_table(
        layout.root.folder / "catalog" / "rows" / "openx" / "cmu_stretch" / "episodes.parquet"
    ).to_pylist()
    assert [r["episodes/episode"] for r in got] == [r["episode"] for r in rows] == [0, 1, 2]
    assert [r["episodes/defects"] for r in got] == [0, 0, 0]
    assert [r["episodes/content_hash"].decode() for r in got] == [r["content_hash"] for r in rows]
    assert "findings" in doc["recordSet"][0]["description"]  # nested: named, not a field


def test_the_curation_columns_a_query_names():
    assert curation_columns(SQL) == ["defects", "near_duplicate_of"]
    assert curation_columns("SELECT * FROM episodes WHERE score_quality > 0.5") == ["score_quality"]
    assert curation_columns("SELECT * FROM episodes") == []


def test_columns_that_differ_only_in_unsafe_characters_get_their_own_ids(tmp_path):
    """``cam high`` and ``cam_high`` (#69) had one id, and mlcroissant refused the document."""
    from episode_warehouse.export.croissant import record_set

    schema = pa.schema([("cam high", pa.float32()), ("cam_high", pa.float32()),
                        ("cam/high", pa.float32())])  # fmt: skip
    fields = record_set("frames", "data", schema, "")["field"]
    ids = [f["@id"] for f in fields]
    assert len(set(ids)) == 3 and "frames/cam_high" in ids
