"""LeRobot exports through the asset graph: a partition, and a named SQL selection."""

import json

import dagster as dg
import pytest

from episode_warehouse.paths import WarehouseLayout
from warehouse_cli.main import main
from warehouse_cli.runner import materialize_partition


@pytest.fixture
def instance(warehouse_env):
    with dg.instance_for_test() as inst:
        yield inst


def test_partition_export_loads_with_lerobot(warehouse_env, instance):
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    materialize_partition("openx", "bridge", through="lerobot", instance=instance)
    target = WarehouseLayout.from_root(warehouse_env).lerobot_dir("openx-bridge")
    ds = LeRobotDataset("episode-warehouse/openx-bridge", root=target)
    assert ds.meta.total_episodes == 4 and ds.meta.total_frames == 130
    assert {"observation.images.image", "observation.images.wrist_image"} <= set(ds.features)


def test_selection_export_records_query_and_episodes(warehouse_env, capsys):
    # one partition: the query orders and limits its 12 episodes as it would several
    assert main(["materialize", "atari", "Pong/5", "--through", "catalog"]) == 0
    query = (
        "SELECT source, partition, episode, start, length FROM episodes WHERE source = "
        "'atari' ORDER BY \"return\" DESC, partition, episode LIMIT 3"
    )
    assert main(["export", "top3", query]) == 0
    meta = json.loads(
        (warehouse_env / "lerobot" / "top3" / "meta" / "warehouse_export.json").read_text()
    )
    assert meta["request"]["query"] == query and len(meta["episode_list"]) == 3
    from episode_warehouse.loading import Selection, select_episodes

    pinned = Selection.load(
        warehouse_env / "lerobot" / "top3" / "meta" / "warehouse_selection.json"
    )
    assert pinned.rows() == select_episodes(query, root=warehouse_env).rows()  # pinned episodes
    assert pinned.query.strip() == query
    capsys.readouterr()
    assert main(["export", "top3", query.replace("3", "4")]) == 2
    assert "exists with another query" in capsys.readouterr().err
    assert main(["export", "none", query.replace("'atari'", "'nope'")]) == 2
    assert "no episode" in capsys.readouterr().err
    assert not (warehouse_env / "lerobot" / "none").exists()
    # the refused export registered nothing: the corrected query takes the same name (#43)
    assert not (warehouse_env / "selections" / "none.sql").exists()
    assert main(["export", "none", query.replace("3", "2")]) == 0


def test_export_of_unmaterialized_partition_is_refused(warehouse_env, instance):
    import assets.graph as graph
    from assets.location import build_resources
    from warehouse_cli.runner import our_error

    result = dg.materialize(
        graph.ALL_ASSETS,
        selection=[graph.stage_asset("atari", "lerobot")],
        partition_key="Pong/1",
        instance=instance,
        resources=build_resources(),
        raise_on_error=False,
    )
    assert not result.success
    failure = next(e for e in result.all_events if e.is_step_failure)
    message = our_error(failure.step_failure_data.error).message
    assert "not materialized" in message and "materialize atari_ted for Pong/1" in message
    assert not (warehouse_env / "lerobot").exists()
