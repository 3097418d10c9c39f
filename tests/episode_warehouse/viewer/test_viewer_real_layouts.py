"""The viewer on a real OXE layout (#48): the TensorFlow Datasets authors' bridge sample, whose
action is nested (``action/world_vector``, ``action/rotation_delta``, ``action/open_gripper``,
a bool). Its partition page showed no action statistics (and advised materializing a catalog
that existed), and the bool leaf was neither plotted nor listed."""

from __future__ import annotations

import numpy as np
import pytest

from episode_warehouse.catalog.statistics import publish_statistics, read_partition_statistics
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.sources.openx.raw import mirror_openx
from episode_warehouse.sources.openx.stage import decode_openx
from episode_warehouse.stages import build_ted_stage
from episode_warehouse.ted import open_ted
from episode_warehouse.viewer.episode import series
from episode_warehouse.viewer.overview import overview
from episode_warehouse.viewer.partition import PartitionTed


@pytest.fixture(scope="module")
def bridge(shared_samples, tmp_path_factory):
    layout = WarehouseLayout.local(tmp_path_factory.mktemp("bridge") / "wh")
    src = shared_samples / "rlds"
    mirror_openx(str(src), "bridge", layout.raw_dir("openx", "bridge"), root=layout.root,
                 code_version="t")  # fmt: skip
    decode_openx(layout, "bridge", code_version="t")
    build_ted_stage(layout, "openx", "bridge", code_version="t")
    publish_statistics(layout, "openx", "bridge", code_version="t")
    return layout


def test_nested_action_statistics_are_shown_per_leaf(bridge):
    stats = read_partition_statistics(bridge.folder, "openx", "bridge")
    page = overview(PartitionTed(bridge.root, "openx", "bridge"), stats)["action"]
    assert page is not None  # was None: the page advised materializing the catalog
    td = open_ted("openx", "bridge", root=bridge.folder)
    vector = td["action", "world_vector"].double().numpy()
    names = page["names"]
    assert names[:3] == ["rotation_delta[0]", "rotation_delta[1]", "rotation_delta[2]"]
    assert "world_vector[2]" in names and "terminate_episode" in names
    columns = page["columns"]
    for i in range(3):
        row = page["rows"][names.index(f"world_vector[{i}]")]
        assert row[columns.index("mean")] == pytest.approx(vector[:, i].mean())
        assert row[columns.index("max")] == pytest.approx(vector[:, i].max())


def test_bool_leaves_are_plotted_as_0_and_1(bridge):
    ted = PartitionTed(bridge.root, "openx", "bridge")
    rows = ted.rows(0)
    plotted, _ = series(rows, {})
    gripper = next(s for s in plotted if s["key"] == "action/open_gripper")
    want = rows["action", "open_gripper"].numpy().astype(float).reshape(-1).tolist()
    assert gripper["values"] == [want] and set(want) <= {0.0, 1.0}
    assert not any(s["key"].endswith(("done", "terminated", "truncated")) for s in plotted)
    assert np.all(np.diff(gripper["steps"][0]) == 1)
