"""OPENX_SHARD_RANGES through Dagster: the sensor lists DROID as shard ranges and requests only
the range whose shard changed; a range materializes through the real asset graph with only its
shards mirrored."""

import os

import dagster as dg
import pytest

from episode_warehouse import open_ted
from sensors.sources import SOURCE_SENSORS
from warehouse_cli.runner import materialize_partition
from warehouse_fixtures import rlds_writer as w
from warehouse_fixtures.droid import FEATURES, droid_episode, write_droid

pytestmark = pytest.mark.integration
RANGES = ["droid@00000-00001", "droid@00002-00003", "droid@00004-00005"]


def _tick(instance, cursor):
    from assets.location import build_resources

    ctx = dg.build_sensor_context(instance=instance, cursor=cursor, resources=build_resources())
    return SOURCE_SENSORS["openx"](ctx)


def test_the_sensor_lists_droid_as_ranges_and_a_range_builds_alone(
    warehouse_env, tmp_path, monkeypatch
):
    src = tmp_path / "openx"
    write_droid(src, shards=6, per_shard=1)
    monkeypatch.setenv("OPENX_URL", str(src))
    monkeypatch.setenv("OPENX_SHARD_RANGES", "droid=2")
    with dg.instance_for_test() as instance:
        first = _tick(instance, None)
        assert sorted(r.partition_key for r in first.run_requests) == RANGES
        assert sorted(first.dynamic_partitions_requests[0].partition_keys) == RANGES
        assert isinstance(_tick(instance, first.cursor), dg.SkipReason)

        shard = src / "droid" / "1.0.1" / "droid-train.tfrecord-00004-of-00006"
        shard.write_bytes(w.frame_record(w.serialize_episode(FEATURES, droid_episode(77).record)))
        second = _tick(instance, first.cursor)
        assert [r.partition_key for r in second.run_requests] == [RANGES[2]]

        materialize_partition("openx", RANGES[1], through="catalog", instance=instance)
        raw = warehouse_env / "raw" / "openx" / RANGES[1] / "rlds"
        assert sorted(os.listdir(raw)) == [
            "droid-train.tfrecord-00002-of-00006", "droid-train.tfrecord-00003-of-00006"
        ]  # fmt: skip
        td = open_ted("openx", RANGES[1])
        assert td["episode"].unique().tolist() == [0, 1]
        assert ("observation", "wrist_image_left") in td.keys(True)
