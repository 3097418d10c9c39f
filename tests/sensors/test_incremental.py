"""Sensors, automation and staleness: only what changed is requested, rebuilt and marked."""

import gzip
import io
import json

import dagster as dg
import numpy as np
import pytest

from assets.graph import ALL_ASSETS, stage_asset
from episode_warehouse import open_ted
from episode_warehouse.storage.local import LocalRoot
from sensors.sources import SOURCE_SENSORS
from warehouse_cli.runner import materialize_partition
from warehouse_fixtures.gcs_emulator import upload_tree

BUCKET = "sensor-test"


@pytest.fixture
def sensor_bucket(warehouse_env, demo_fixtures, gcs_endpoint, monkeypatch, tmp_path):
    """A bucket of its own (this test rewrites files in it) with Pong/1 and Pong/5."""
    src = demo_fixtures / "atari-bucket" / "dqn"
    for key in ("Pong/1", "Pong/5"):
        upload_tree(gcs_endpoint, BUCKET, src / key, prefix=f"dqn/{key}")
    monkeypatch.setenv("ATARI_REPLAY_URL", f"gs://{BUCKET}/dqn")
    return gcs_endpoint


def _tick(sensor, instance, cursor):
    from assets.location import build_resources

    ctx = dg.build_sensor_context(
        instance=instance, cursor=cursor, resources=build_resources()
    )  # read the test's environment
    return sensor(ctx)


def _snapshot(root, key):
    out = {}
    for stage in ("decoded", "ted"):
        for p in sorted((root / stage / "atari" / key).rglob("*")):
            if p.is_file():
                out[str(p)] = (p.stat().st_mtime_ns, p.read_bytes())
    return out


def _rewrite_rewards(endpoint, demo_fixtures, key):
    """Upload a changed $store$_reward_ckpt.0.gz for ``key``: every reward of 0 becomes 0.5 (still
    a clipped reward, as the decoder requires)."""
    path = demo_fixtures / "atari-bucket" / "dqn" / key / "replay_logs" / "$store$_reward_ckpt.0.gz"
    with gzip.open(path) as fh:
        reward = np.load(io.BytesIO(fh.read()))
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as gz:
        np.save(gz, np.where(reward == 0, 0.5, reward).astype(np.float32), allow_pickle=False)
    from google.cloud import storage

    client = storage.Client(project="t", client_options={"api_endpoint": endpoint})
    client.bucket(BUCKET).blob(
        f"dqn/{key}/replay_logs/$store$_reward_ckpt.0.gz"
    ).upload_from_string(buf.getvalue())


def test_changed_file_requests_one_partition_and_rebuild_equals_clean(
    sensor_bucket, demo_fixtures, warehouse_env, monkeypatch, tmp_path
):
    with dg.instance_for_test() as instance:
        for key in ("Pong/1", "Pong/5"):
            materialize_partition("atari", key, through="catalog", instance=instance)
        first = _tick(SOURCE_SENSORS["atari"], instance, None)
        assert sorted(r.partition_key for r in first.run_requests) == ["Pong/1", "Pong/5"]
        assert isinstance(_tick(SOURCE_SENSORS["atari"], instance, first.cursor), dg.SkipReason)

        before_other = _snapshot(warehouse_env, "Pong/5")
        reward_before = open_ted("atari", "Pong/1")["next", "reward"][:].clone()
        _rewrite_rewards(sensor_bucket, demo_fixtures, "Pong/1")
        second = _tick(SOURCE_SENSORS["atari"], instance, first.cursor)
        assert [r.partition_key for r in second.run_requests] == ["Pong/1"]
        materialize_partition("atari", "Pong/1", through="catalog", instance=instance)

        assert _snapshot(warehouse_env, "Pong/5") == before_other  # untouched, byte for byte
        ted = open_ted("atari", "Pong/1")
        changed = (ted["next", "reward"] - reward_before).flatten()
        assert set(changed.unique().tolist()) <= {0.0, 0.5} and (changed == 0.5).sum() > 1000
        from episode_warehouse.catalog import run_query

        _, rows = run_query(
            LocalRoot(warehouse_env),
            "SELECT partition, count(*), "
            "count(DISTINCT run_id) FROM episodes GROUP BY 1 ORDER BY 1",
        )
        assert [r[0] for r in rows] == ["Pong/1", "Pong/5"] and all(r[2] == 1 for r in rows)

        monkeypatch.setenv("EPISODE_WAREHOUSE_ROOT", str(tmp_path / "clean"))
        materialize_partition("atari", "Pong/1", through="ted", instance=instance)
        clean = open_ted("atari", "Pong/1")
        for k in clean.keys(True, True):
            assert np.array_equal(clean.get(k)[:].numpy(), ted.get(k)[:].numpy()), k


def test_openx_sensor_adds_new_datasets_as_partitions(
    warehouse_env, tmp_path, monkeypatch, demo_fixtures
):
    with dg.instance_for_test() as instance:
        result = _tick(SOURCE_SENSORS["openx"], instance, None)
        assert sorted(r.partition_key for r in result.run_requests) == ["bridge", "cmu_stretch"]
        adds = result.dynamic_partitions_requests[0]
        assert sorted(adds.partition_keys) == ["bridge", "cmu_stretch"]
        again = _tick(SOURCE_SENSORS["openx"], instance, result.cursor)
        assert isinstance(again, dg.SkipReason)
        assert json.loads(result.cursor).keys() == {"bridge", "cmu_stretch"}


def test_automation_follows_only_the_updated_partition(warehouse_env):
    with dg.instance_for_test() as instance:
        from assets.location import build_resources

        location = dg.Definitions(assets=ALL_ASSETS, resources=build_resources())
        baseline = dg.evaluate_automation_conditions(defs=location, instance=instance)
        materialize_partition("atari", "Pong/5", through="raw", instance=instance)
        after = dg.evaluate_automation_conditions(
            defs=location, instance=instance, cursor=baseline.cursor
        )
        # eager plans the whole chain below the update in one tick, for that partition only
        for name in ("atari_episodes", "atari_ted", "atari_catalog_rows", "atari_lerobot_export"):
            assert after.get_requested_partitions(dg.AssetKey(name)) == {"Pong/5"}, name
        assert after.get_requested_partitions(dg.AssetKey("openx_episodes")) == set()


def test_code_version_bump_marks_exactly_the_dependents_stale(warehouse_env):
    from dagster._core.definitions.data_version import StaleStatus
    from dagster._utils.test.data_versions import get_stale_status_resolver

    with dg.instance_for_test() as instance:
        materialize_partition("atari", "Pong/5", through="catalog", instance=instance)
        atari_ted = stage_asset("atari", "ted")
        bumped_ted = atari_ted.map_asset_specs(
            lambda spec: spec.replace_attributes(code_version="999")
        )
        bumped = [bumped_ted if a is atari_ted else a for a in ALL_ASSETS]

        def status(assets, name):
            resolver = get_stale_status_resolver(instance, assets)
            return resolver.get_status(dg.AssetKey(name), "Pong/5")

        assert status(bumped, "atari_replay_files") == StaleStatus.FRESH
        assert status(bumped, "atari_episodes") == StaleStatus.FRESH
        assert status(bumped, "atari_ted") == StaleStatus.STALE  # "has a new code version"
        assert status(bumped, "atari_catalog_rows") == StaleStatus.FRESH
        assert status(ALL_ASSETS, "atari_ted") == StaleStatus.FRESH
        # rebuilding the bumped asset gives it a new data version: its dependents go stale
        from assets.location import build_resources

        dg.materialize(
            bumped,
            selection=[bumped_ted],
            partition_key="Pong/5",
            instance=instance,
            resources=build_resources(),
        )
        assert status(bumped, "atari_ted") == StaleStatus.FRESH
        assert status(bumped, "atari_catalog_rows") == StaleStatus.STALE
        assert status(bumped, "atari_episodes") == StaleStatus.FRESH
