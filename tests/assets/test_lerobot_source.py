"""A LeRobot v3.0 dataset through the asset graph: from a local folder and from a bucket (the
GCS emulator), into the same TED, the catalog and the loaders."""

from __future__ import annotations

import pytest
import torch

from episode_warehouse import open_ted
from episode_warehouse.loading import select_episodes
from episode_warehouse.storage.local import LocalRoot
from tests.helpers import dagster_home_of
from warehouse_cli.main import main
from warehouse_fixtures.gcs_emulator import upload_tree
from warehouse_fixtures.lerobot_writer import TELEOP, LeRobotSpec, write_lerobot_dataset

SPEC = LeRobotSpec(repo_id="lab/pick_place")


@pytest.fixture(scope="module")
def lerobot_folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("lerobot-source")
    write_lerobot_dataset(SPEC, root)
    return root


def test_a_lerobot_dataset_from_a_folder_and_from_a_bucket(
    warehouse_env, lerobot_folder, gcs_endpoint, monkeypatch, tmp_path, capsys
):
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    monkeypatch.setenv("LEROBOT_URL", str(lerobot_folder))
    assert main(["materialize", "lerobot", SPEC.repo_id]) == 0
    td = open_ted("lerobot", SPEC.repo_id, root=warehouse_env)
    theirs = LeRobotDataset(SPEC.repo_id, root=lerobot_folder / SPEC.repo_id)
    last = len(theirs) - 1
    pixels = (theirs[last]["observation.images.top"] * 255).round().to(torch.uint8)
    assert torch.equal(td["observation", "image", "top"][last], pixels)
    sel = select_episodes(
        "SELECT source, partition, episode, start, length FROM episodes "
        "WHERE source = 'lerobot' AND language_instruction = 'place it in the bowl'",
        root=warehouse_env,
    )
    assert list(sel.length) == [n for e, n in enumerate(SPEC.lengths) if e % 2 == 1]
    from episode_warehouse.catalog import run_query

    _, rows = run_query(
        LocalRoot(warehouse_env),
        "SELECT fps, robot_type, episodes, frames FROM partitions WHERE source = 'lerobot'",
    )
    assert rows == [(SPEC.fps, "fixture_arm", len(SPEC.lengths), sum(SPEC.lengths))]
    _assert_catalog_keeps_lerobot_metadata(warehouse_env, lerobot_folder)
    _assert_export_round_trips(theirs, warehouse_env)
    capsys.readouterr()
    assert main(["materialize", "lerobot", SPEC.repo_id]) == 0  # nothing changed: nothing built
    assert "up to date" in capsys.readouterr().out

    # the same dataset from a bucket, into another root: the same TED files
    upload_tree(gcs_endpoint, "lerobot-datasets", lerobot_folder, prefix="mirror")
    other = tmp_path / "from-bucket"
    monkeypatch.setenv("LEROBOT_URL", "gs://lerobot-datasets/mirror")
    with dagster_home_of(other):
        assert (
            main(["materialize", "lerobot", SPEC.repo_id, "--root", str(other), "--through", "ted"])
            == 0
        )
    here = open_ted("lerobot", SPEC.repo_id, root=other)
    for key in td.keys(True, True):
        assert torch.equal(torch.as_tensor(here.get(key)), torch.as_tensor(td.get(key))), key


def _assert_catalog_keeps_lerobot_metadata(root, lerobot_folder):
    """Every task and LeRobot's own per-episode statistics, as meta/episodes holds them."""
    import json

    import pyarrow.parquet as pq

    from episode_warehouse.catalog import run_query

    meta = pq.read_table(lerobot_folder / SPEC.repo_id / "meta" / "episodes").to_pylist()
    _, rows = run_query(
        LocalRoot(root),
        "SELECT episode, tasks, lerobot_stats FROM episodes WHERE source = 'lerobot' "
        "ORDER BY episode",
    )
    assert [r[1] for r in rows] == [m["tasks"] for m in meta]
    for (_, _, stats), m in zip(rows, meta, strict=True):
        stats = json.loads(stats)
        assert stats["observation.state"]["mean"] == m["stats/observation.state/mean"]
        assert stats["observation.images.top"]["max"] == m["stats/observation.images.top/max"]
    _, mean = run_query(
        LocalRoot(root),
        "SELECT lerobot_stats->'action'->'count' FROM episodes "
        "WHERE source = 'lerobot' AND episode = 1",
    )
    assert json.loads(mean[0][0]) == meta[1]["stats/action/count"]


def _assert_export_round_trips(theirs, root):
    """The partition's LeRobot export (the last stage) holds the original dataset's frames."""
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    from episode_warehouse.paths import WarehouseLayout

    name = "lerobot-" + SPEC.repo_id.replace("/", "-")
    ours = LeRobotDataset(
        f"episode-warehouse/{name}", root=WarehouseLayout.local(root).lerobot_dir(name)
    )
    assert (ours.fps, ours.meta.robot_type) == (theirs.fps, theirs.meta.robot_type)
    assert ours.meta.total_episodes == theirs.meta.total_episodes
    assert len(ours) == len(theirs)
    keys = [*(f"observation.images.{c}" for c in SPEC.cameras), "observation.state", "action"]
    keys += ["next.reward", "next.done", "episode_index", "frame_index", "timestamp", "task"]
    for i in range(len(theirs)):
        a, b = ours[i], theirs[i]
        for key in keys:
            if key == "task":
                assert a[key] == b[key], (i, key)
            else:
                assert torch.equal(a[key], b[key]), (i, key)


def test_a_teleoperation_dataset_goes_through_every_stage(warehouse_env, monkeypatch, tmp_path):
    """lerobot-record's schema (no next.reward, no next.done): TED, catalog, statistics and
    export like any other dataset, with no reward invented anywhere."""
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    from episode_warehouse.catalog import run_query
    from episode_warehouse.loading import selection_stats
    from episode_warehouse.paths import WarehouseLayout

    folder = tmp_path / "teleop"
    write_lerobot_dataset(TELEOP, folder)
    monkeypatch.setenv("LEROBOT_URL", str(folder))
    assert main(["materialize", "lerobot", TELEOP.repo_id]) == 0
    td = open_ted("lerobot", TELEOP.repo_id, root=warehouse_env)
    assert ("next", "reward") not in td.keys(True, True)
    _, rows = run_query(
        LocalRoot(warehouse_env),
        'SELECT length, "return", terminated, truncated FROM episodes ORDER BY episode',
    )
    assert rows == [(n, None, False, True) for n in TELEOP.lengths]
    sel = select_episodes(
        "SELECT source, partition, episode, start, length FROM episodes", root=warehouse_env
    )
    stats = selection_stats(sel, ["action"])  # from the statistics asset's partials
    want = td["action"].double()
    assert torch.allclose(torch.as_tensor(stats["action"]["mean"]), want.mean(0), atol=1e-6)

    theirs = LeRobotDataset(TELEOP.repo_id, root=folder / TELEOP.repo_id)
    name = "lerobot-" + TELEOP.repo_id.replace("/", "-")
    ours = LeRobotDataset(
        f"episode-warehouse/{name}", root=WarehouseLayout.local(warehouse_env).lerobot_dir(name)
    )
    assert "next.reward" not in ours.meta.features and len(ours) == len(theirs)
    # #43: the re-export keeps the source's dimension names and invents no next.done
    assert "next.done" not in ours.meta.features and "next.done" not in theirs.meta.features
    for key in ("action", "observation.state"):
        assert ours.meta.features[key]["names"] == theirs.meta.features[key]["names"], key
        assert theirs.meta.features[key]["names"]
    assert ours.meta.robot_type == TELEOP.robot_type and ours.fps == TELEOP.fps
    for i in range(len(theirs)):
        a, b = ours[i], theirs[i]
        for key in [*(f"observation.images.{c}" for c in TELEOP.cameras), "observation.state"]:
            assert torch.equal(a[key], b[key]), (i, key)
        assert torch.equal(a["action"], b["action"]) and a["task"] == b["task"]


def test_lerobot_source_errors_name_the_fix(warehouse_env, monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("LEROBOT_URL", "hf://datasets/lab/pick_place")
    assert main(["materialize", "lerobot", "lab/pick_place"]) == 2
    assert "LEROBOT_URL names one repo" in capsys.readouterr().err
    monkeypatch.setenv("LEROBOT_URL", str(tmp_path))
    assert main(["materialize", "lerobot", "lab/none"]) == 2
    assert "no LeRobot dataset there (no meta/info.json)" in capsys.readouterr().err
    assert main(["materialize", "lerobot", "../etc"]) == 2
    assert "not a LeRobot repo id" in capsys.readouterr().err


def test_the_sensor_adds_datasets_and_requests_only_changed_ones(
    warehouse_env, lerobot_folder, monkeypatch, tmp_path
):
    import shutil

    import dagster as dg

    from assets.location import build_resources
    from sensors.sources import SOURCE_SENSORS

    folder = tmp_path / "datasets"
    shutil.copytree(lerobot_folder, folder)
    (folder / "lab" / "not_a_dataset" / "data").mkdir(parents=True)  # no meta/info.json
    monkeypatch.setenv("LEROBOT_URL", str(folder))

    def tick(instance, cursor):
        context = dg.build_sensor_context(
            instance=instance, cursor=cursor, resources=build_resources()
        )
        return SOURCE_SENSORS["lerobot"](context)

    with dg.instance_for_test() as instance:
        first = tick(instance, None)
        assert [r.partition_key for r in first.run_requests] == [SPEC.repo_id]
        assert first.dynamic_partitions_requests[0].partition_keys == [SPEC.repo_id]
        assert isinstance(tick(instance, first.cursor), dg.SkipReason)
        info = folder / SPEC.repo_id / "meta" / "info.json"
        info.write_text(info.read_text() + "\n")  # a rewritten file: a new fingerprint
        again = tick(instance, first.cursor)
        assert [r.partition_key for r in again.run_requests] == [SPEC.repo_id]
