"""A fourth source is one folder and one registry line: the toy source (``tests/toy_source/``)
goes through every generated stage (TED, catalog rows, statistics, LeRobot export, their checks,
its sensor) with nothing else in the project changed, and each stage holds the toy simulator's
ground truth."""

from __future__ import annotations

import dagster as dg
import numpy as np
import pytest

from assets.graph import build_graph
from assets.location import build_resources
from assets.sources import SOURCE_ASSETS
from episode_warehouse import open_ted
from episode_warehouse.catalog import run_query
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.sources import registry
from sensors.sources import source_sensor
from tests.toy_source import source as toy
from tests.toy_source import wiring

LENGTHS = [7, 4, 9]


@pytest.fixture
def toy_world(warehouse_env, tmp_path):
    folder = tmp_path / "toy-source"
    truth = toy.write_episodes(folder, "walk", LENGTHS, seed=3)
    toy.write_episodes(folder, "drift", [5], seed=4)
    with registry.registered(toy.SOURCE):
        yield folder, truth


def test_the_toy_source_goes_through_every_generated_stage(toy_world, warehouse_env):
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    folder, truth = toy_world
    graphs, assets, checks = build_graph([*SOURCE_ASSETS, wiring.ASSETS])
    toy_graph = graphs["toy"]
    assert [a.key.to_user_string() for a in toy_graph.assets()] == [
        "toy_files",
        "toy_episodes",
        "toy_ted",
        "toy_catalog_rows",
        "toy_standardized",
        "toy_lerobot_export",
        "toy_statistics",
        "toy_score_quality",
        "toy_score_success_progress",
    ]  # fmt: skip  (toy_standardized: opt-in, for a partition with a declared mapping)
    resources = {**build_resources(), "toy_source": wiring.ToySource(folder=str(folder))}
    # a new source joins mixtures by a declared mapping, no code (docs/standardized.md)
    (warehouse_env / "config").mkdir(parents=True, exist_ok=True)
    (warehouse_env / "config" / "standardized_mappings.json").write_text(
        '{"toy:walk": {"action": "action", "action_encoding": "OTHER", '
        '"state": "observation/state", "views": {}}}'
    )
    with dg.instance_for_test() as instance:
        result = dg.materialize(
            [*assets, *checks],
            selection=toy_graph.assets(),
            partition_key="walk",
            instance=instance,
            resources=resources,
        )
    assert result.success
    evaluations = result.get_asset_check_evaluations()
    names = {e.check_name for e in evaluations}
    assert names == {
        "ted_consistency", "rows_match_ted", "integrity_audit", "loads_with_lerobot",
        "croissant_loads",
    }  # fmt: skip
    by_name = {e.check_name: e for e in evaluations}
    audit = by_name.pop("integrity_audit")  # 7, 4 and 9 steps at 20 Hz: each under a second
    assert audit.metadata["findings_by_kind"].value == {"short_episode": 3}
    assert all(e.passed for e in by_name.values()), [e.metadata for e in by_name.values()]

    td = open_ted("toy", "walk")
    from episode_warehouse.standardized import open_standardized

    std = open_standardized("toy", "walk")
    np.testing.assert_array_equal(std["action"].numpy().reshape(-1), td["action"].numpy())
    np.testing.assert_array_equal(std["observation", "state"].numpy(), td["observation", "state"])
    np.testing.assert_array_equal(
        td["observation", "state"].numpy(), np.concatenate([e["state"] for e in truth])
    )
    np.testing.assert_array_equal(
        td["action"].numpy(), np.concatenate([e["action"] for e in truth])
    )
    np.testing.assert_array_equal(
        td["next", "reward"].numpy().reshape(-1), np.concatenate([e["reward"] for e in truth])
    )
    ends = np.cumsum(LENGTHS) - 1
    assert np.flatnonzero(td["next", "done"].numpy().reshape(-1)).tolist() == ends.tolist()
    terminated = np.flatnonzero(td["next", "terminated"].numpy().reshape(-1)).tolist()
    assert terminated == [ends[0], ends[2]]  # the simulator ends even-numbered episodes

    _, rows = run_query(
        WarehouseLayout.from_root(warehouse_env).root,
        "SELECT episode, length, \"return\", terminated FROM episodes WHERE source = 'toy' "
        "ORDER BY episode",
    )
    assert [(r[0], r[1], r[3]) for r in rows] == [(0, 7, True), (1, 4, False), (2, 9, True)]
    np.testing.assert_allclose([r[2] for r in rows], [e["reward"].sum() for e in truth], rtol=1e-6)
    _, fps = run_query(
        WarehouseLayout.from_root(warehouse_env).root,
        "SELECT fps FROM partitions WHERE source = 'toy'",
    )
    assert fps == [(toy.FPS,)]

    target = WarehouseLayout.from_root(warehouse_env).lerobot_dir("toy-walk")
    exported = LeRobotDataset("episode-warehouse/toy-walk", root=target)
    assert exported.fps == toy.FPS and exported.meta.total_episodes == len(LENGTHS)
    assert exported.meta.features["action"]["dtype"] == "int64"
    assert exported.meta.features["observation.images.cam"]["shape"] == (8, 8, 3)
    np.testing.assert_array_equal(
        np.asarray(exported.hf_dataset["action"]).reshape(-1),
        np.concatenate([e["action"] for e in truth]),
    )
    frame = exported[LENGTHS[0] + 2]  # episode 1, step 2: cam value 2 * 7 + 1, CHW float
    np.testing.assert_allclose(frame["observation.images.cam"].numpy(), (2 * 7 + 1) / 255.0)
    np.testing.assert_array_equal(frame["observation.state"].numpy(), truth[1]["state"][2])


def test_the_toy_sources_sensor_requests_its_partitions(toy_world):
    folder, _ = toy_world
    sensor = source_sensor(wiring.ASSETS)
    assert sensor.name == "toy_source_sensor"
    resources = {**build_resources(), "toy_source": wiring.ToySource(folder=str(folder))}
    _, assets, _ = build_graph([*SOURCE_ASSETS, wiring.ASSETS])
    definitions = dg.Definitions(assets=assets, sensors=[sensor], resources=resources)
    with dg.instance_for_test() as instance:
        context = dg.build_sensor_context(
            instance=instance, resources=resources, definitions=definitions
        )
        called = sensor(context)  # a direct call: resources passed as keywords
        ticked = sensor.evaluate_tick(context)  # as the daemon runs it: resources on the context
    assert sorted(r.partition_key for r in called.run_requests) == ["drift", "walk"]
    assert sorted(r.partition_key for r in ticked.run_requests) == ["drift", "walk"]


def test_a_source_name_is_refused_twice_and_unknown_names_name_the_registered(toy_world):
    from episode_warehouse.errors import ConfigError, PartitionKeyError

    with pytest.raises(ConfigError, match="registered already"):
        registry.register(toy.SOURCE)
    with pytest.raises(PartitionKeyError, match="atari, openx, lerobot, minari, toy"):
        registry.get("nope")
    with pytest.raises(PartitionKeyError, match="not a toy partition"):
        registry.check_partition("toy", "Walk/1")
