"""An RLDS dataset through the asset graph: from a folder and from a bucket (the GCS emulator,
downloaded and streamed) into the same TED; the catalog's split, version and metadata columns;
a changed shard re-fetches only itself; the sensor finds RLDS folders."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
import torch

from episode_warehouse import open_ted
from episode_warehouse.catalog import run_query
from episode_warehouse.sources.openx.fingerprints import openx_fingerprints
from episode_warehouse.storage.local import LocalRoot
from tests.helpers import dagster_home_of
from warehouse_cli.main import main
from warehouse_fixtures.gcs_emulator import upload_tree
from warehouse_fixtures.rlds_robot import write_robot_dataset

pytestmark = pytest.mark.integration

SHARDS = {
    "train": [[(0, 5, True), (1, 4, False)], [(2, 6, True)], [(4, 3, False)]],
    "val": [[(3, 3, True)]],
}


@pytest.fixture
def rlds_folder(tmp_path):
    root = tmp_path / "rlds-source"
    write_robot_dataset(root, shards=SHARDS)
    return root


def _raw_meta(root):
    return json.loads((root / "raw" / "openx" / "toy_robot" / "meta.json").read_text())


def test_an_rlds_dataset_from_a_folder_and_a_bucket(
    warehouse_env, rlds_folder, gcs_endpoint, monkeypatch, tmp_path
):
    monkeypatch.setenv("OPENX_URL", str(rlds_folder))
    # a dataset the OXE table of rates does not know: its rate stated (never guessed, #57)
    monkeypatch.setenv("OPENX_CONTROL_HZ", "toy_robot=10")
    assert main(["materialize", "openx", "toy_robot"]) == 0
    td = open_ted("openx", "toy_robot", root=warehouse_env)
    assert td.batch_size[0] == sum(n for parts in SHARDS.values() for s in parts for _, n, _ in s)
    _, rows = run_query(
        LocalRoot(warehouse_env),
        "SELECT split, dataset_version, count(*), "
        "min(json_extract_string(episode_metadata, '$.episode_id')) FROM episodes "
        "WHERE source = 'openx' GROUP BY ALL ORDER BY split",
    )
    assert rows == [("train", "1.0.0", 4, "ep-0"), ("val", "1.0.0", 1, "ep-3")]
    _, rows = run_query(
        LocalRoot(warehouse_env),
        "SELECT source_url FROM partitions WHERE source = 'openx'",
    )
    assert rows[0][0].endswith("toy_robot/1.0.0")  # the version read, in the lineage
    _assert_export_holds_the_steps(warehouse_env, td)

    upload_tree(gcs_endpoint, "oxe", rlds_folder, prefix="robotics")
    monkeypatch.setenv("OPENX_URL", "gs://oxe/robotics")
    for mode in ("download", "streaming"):
        other = tmp_path / f"from-bucket-{mode}"
        monkeypatch.setenv("OPENX_MODE", mode)
        args = ["materialize", "openx", "toy_robot", "--root", str(other), "--through", "ted"]
        with dagster_home_of(other):
            assert main(args) == 0
        raw = _raw_meta(other)
        assert raw["mode"] == mode and raw["layout"] == "rlds"
        assert bool(raw["files"]) == (mode == "download")  # streaming keeps no copy
        here = open_ted("openx", "toy_robot", root=other)
        for key in td.keys(True, True):
            assert torch.equal(here.get(key), td.get(key)), (mode, key)


def _assert_export_holds_the_steps(root, td):
    """The LeRobot export: a dict action concatenated in key order (its names say which is
    which), a grey camera as RGB, a uint16 depth map as float32 values, the tasks per step."""
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    from episode_warehouse.paths import WarehouseLayout

    ours = LeRobotDataset(
        "episode-warehouse/openx-toy_robot",
        root=WarehouseLayout.local(root).lerobot_dir("openx-toy_robot"),
    )
    ted = WarehouseLayout.local(root).ted_dir("openx", "toy_robot")
    tasks = json.loads((ted / "meta.json").read_text())["tasks"]
    starts = pq.read_table(ted / "episodes.parquet")["start"].to_pylist()
    assert ours.meta.fps == 10  # the rate OPENX_CONTROL_HZ stated
    names = ours.meta.features["action"]["names"]
    assert names[:4] == ["gripper", "mode", "raw_bytes_0", "raw_bytes_1"]
    assert len(ours) == td.batch_size[0]
    for i in (0, len(ours) - 1):
        frame = ours[i]
        parts = [td["action", k][i].reshape(-1).float() for k in ("gripper", "mode", "raw_bytes",
                 "world_vector")]  # fmt: skip
        assert torch.equal(frame["action"], torch.cat(parts))
        wrist = td["observation", "wrist_image"][i].float() / 255
        assert torch.equal(frame["observation.images.wrist_image"], wrist.expand(3, -1, -1))
        depth = td["observation", "depth"][i].float()
        assert torch.equal(frame["observation.depth"], depth)
        # one task per exported episode: its first step's instruction
        start = max(s for s in starts if s <= i)
        assert frame["task"] == tasks[int(td["task_index"][start])], i


def test_a_changed_shard_is_the_only_one_fetched_and_decoded_again(
    warehouse_env, rlds_folder, gcs_endpoint, monkeypatch, tmp_path
):
    upload_tree(gcs_endpoint, "oxe-inc", rlds_folder, prefix="robotics")
    monkeypatch.setenv("OPENX_URL", "gs://oxe-inc/robotics")
    assert main(["materialize", "openx", "toy_robot", "--through", "decoded"]) == 0
    first = _raw_meta(warehouse_env)
    assert first["copied"] == 4
    # one shard rewritten with other episodes and uploaded alone (a new generation)
    changed = dict(SHARDS, train=[[(0, 5, True), (1, 4, False)], [(7, 8, True)], [(4, 3, False)]])
    staged = tmp_path / "changed"
    write_robot_dataset(staged, shards=changed)
    name = "toy_robot-train.tfrecord-00001-of-00003"
    for other in (staged / "toy_robot" / "1.0.0").iterdir():
        if other.name not in (name, "dataset_info.json"):
            other.unlink()
    upload_tree(gcs_endpoint, "oxe-inc", staged, prefix="robotics")
    assert main(["materialize", "openx", "toy_robot", "--through", "decoded"]) == 0
    second = _raw_meta(warehouse_env)
    assert second["copied"] == 1
    assert [n for n in second["files"] if second["files"][n] != first["files"][n]] == [name]
    decoded = json.loads(
        (warehouse_env / "decoded" / "openx" / "toy_robot" / "meta.json").read_text()
    )
    assert decoded["rows"] == 5 + 4 + 8 + 3 + 3
    assert decoded["reused_shards"] == 3  # and the only one decoded again
    assert openx_fingerprints("gs://oxe-inc/robotics", gcs_endpoint).keys() == {"toy_robot"}
