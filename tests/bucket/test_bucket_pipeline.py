"""The Dagster graph with a gs:// root: Atari and OpenX partitions materialized into the bucket
equal the same partitions materialized into a local folder, byte for byte and query for query.
"""

import json

import dagster as dg
import numpy as np
import pytest

from episode_warehouse import open_ted
from episode_warehouse.catalog import run_query
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.storage.bucket.artifact import PUBLISHED, RemoteArtifact
from episode_warehouse.storage.bucket.objects import Bucket
from warehouse_cli.runner import materialize_partition

pytestmark = pytest.mark.slow
PARTITIONS = (("atari", "Pong/5"), ("openx", "cmu_stretch"))
EPISODES = (
    "SELECT * EXCLUDE (run_id, materialized_at) FROM episodes ORDER BY source, partition, episode"
)
PARTITION_ROWS = "SELECT source, partition, episodes, frames FROM partitions ORDER BY ALL"


def _materialize_all() -> None:
    with dg.instance_for_test() as instance:
        for source, key in PARTITIONS:
            materialize_partition(source, key, instance=instance)


def test_bucket_root_equals_local_root(warehouse_env, bucket_url, tmp_path, monkeypatch):
    _materialize_all()  # into the bucket (bucket_url set EPISODE_WAREHOUSE_ROOT)
    bucket = Bucket.parse(bucket_url)
    over_bucket = {
        q: run_query(WarehouseLayout.from_root().root, q) for q in (EPISODES, PARTITION_ROWS)
    }
    from_bucket = {p: open_ted(*p) for p in PARTITIONS}
    records = {p: RemoteArtifact(bucket, f"ted/{p[0]}/{p[1]}").read()[0] for p in PARTITIONS}

    monkeypatch.setenv("EPISODE_WAREHOUSE_ROOT", str(warehouse_env))
    _materialize_all()
    local = WarehouseLayout.from_root()
    assert {q: run_query(local.root, q) for q in (EPISODES, PARTITION_ROWS)} == over_bucket
    assert len(over_bucket[EPISODES][1]) > 10
    for (source, key), record in records.items():
        folder = local.ted_dir(source, key)
        artifact = RemoteArtifact(bucket, f"ted/{source}/{key}")
        local_files = sorted(
            p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()
        )
        assert sorted([*record[PUBLISHED]["files"], "meta.json"]) == local_files
        for name in record[PUBLISHED]["files"]:
            blob = artifact.blob(record, name)
            got = artifact.store.read_bytes(blob.name, blob.generation)
            assert got == (folder / name).read_bytes(), f"{source} {key} {name}"
        meta = json.loads((folder / "meta.json").read_text())
        assert {k: v for k, v in record.items() if k != PUBLISHED} == meta
        td = open_ted(source, key)
        for k in td.keys(True, True):
            np.testing.assert_array_equal(from_bucket[source, key].get(k)[:], td.get(k)[:], str(k))

    # another machine with an empty scratch folder: everything is current, nothing re-published
    monkeypatch.setenv("EPISODE_WAREHOUSE_ROOT", bucket_url)
    monkeypatch.setenv("EPISODE_WAREHOUSE_LOCAL_COPY", str(tmp_path / "second-machine"))
    generations = {
        p.name: p.generation for p in bucket.store().list("") if p.name.endswith(".json")
    }
    _materialize_all()
    after = {p.name: p.generation for p in bucket.store().list("") if p.name.endswith(".json")}
    assert after == generations
