"""Materialize demo partitions through the real graph: emulator bucket, local mirror, catalog."""

import dagster as dg
import numpy as np
import pyarrow.parquet as pq
import pytest

from assets import versions
from episode_warehouse import open_ted
from episode_warehouse.catalog import run_query
from episode_warehouse.errors import WarehouseError
from episode_warehouse.paths import WarehouseLayout
from warehouse_cli.runner import materialize_partition


@pytest.fixture
def instance(warehouse_env):
    with dg.instance_for_test() as inst:
        yield inst


def _ted_arrays(td):
    return {k: td.get(k)[:].numpy() for k in td.keys(True, True)}


def test_same_ted_from_emulator_bucket_and_local_folder(
    warehouse_env, demo_fixtures, instance, monkeypatch, tmp_path
):
    materialize_partition("atari", "Pong/5", through="ted", instance=instance)
    from_gcs = _ted_arrays(open_ted("atari", "Pong/5"))
    monkeypatch.setenv("EPISODE_WAREHOUSE_ROOT", str(tmp_path / "local"))
    monkeypatch.setenv("ATARI_REPLAY_URL", str(demo_fixtures / "atari-bucket" / "dqn"))
    materialize_partition("atari", "Pong/5", through="ted", instance=instance)
    from_local = _ted_arrays(open_ted("atari", "Pong/5"))
    assert from_gcs.keys() == from_local.keys()
    for key in from_gcs:
        np.testing.assert_array_equal(from_gcs[key], from_local[key], err_msg=str(key))
    assert len(from_gcs["observation"]) > 1000


def test_catalog_rows_match_the_ted(warehouse_env, instance):
    materialize_partition("atari", "Breakout/2", through="catalog", instance=instance)
    materialize_partition("openx", "cmu_stretch", through="catalog", instance=instance)
    layout = WarehouseLayout.from_root(warehouse_env)
    for source, key in (("atari", "Breakout/2"), ("openx", "cmu_stretch")):
        td = open_ted(source, key)
        cols, rows = run_query(
            layout.root,
            'SELECT episode, start, length, "return", terminated, truncated, '
            "source_files, run_id, code_version FROM episodes "
            "WHERE source = ? AND partition = ? ORDER BY episode",
            [source, key],
        )
        episode = td["episode"].numpy()
        assert len(rows) == int(episode.max()) + 1
        reward = td["next", "reward"].numpy()[:, 0]
        terminated = td["next", "terminated"].numpy()[:, 0]
        for ep, start, length, ret, term, trunc, files, run_id, code in rows:
            assert (episode[start : start + length] == ep).all()
            assert td["is_init"][start] and td["next", "done"][start + length - 1, 0]
            assert ret == pytest.approx(float(reward[start : start + length].sum()))
            assert term == bool(terminated[start + length - 1]) and trunc == (not term)
            assert files and all(
                (f.startswith(key) if source == "atari" else f.endswith(".tar")) for f in files
            )
            assert len(run_id) == 36 and code == versions.CATALOG_ROWS
        assert sum(r[2] for r in rows) == td.batch_size[0]
    _, parts = run_query(
        layout.root, "SELECT source, partition, frames, episodes FROM partitions ORDER BY 1"
    )
    assert [(s, p) for s, p, *_ in parts] == [("atari", "Breakout/2"), ("openx", "cmu_stretch")]


def test_rematerializing_replaces_rows_without_duplicates(warehouse_env, instance):
    materialize_partition("openx", "bridge", through="catalog", instance=instance)
    materialize_partition("openx", "bridge", through="catalog", instance=instance)
    layout = WarehouseLayout.from_root(warehouse_env)
    _, rows = run_query(layout.root, "SELECT count(*), count(DISTINCT episode) FROM episodes")
    assert rows[0][0] == rows[0][1] == 4


def test_lost_lap_partition_records_gap(warehouse_env, instance):
    materialize_partition("atari", "Breakout/2", through="decoded", instance=instance)
    layout = WarehouseLayout.from_root(warehouse_env)
    meta = (layout.decoded_dir("atari", "Breakout/2") / "meta.json").read_text()
    assert '"lost_lap"' in meta
    eps = pq.read_table(layout.decoded_dir("atari", "Breakout/2") / "episodes.parquet")
    assert not all(eps.column("complete").to_pylist())


def test_failures_surface_as_one_line(warehouse_env, instance, monkeypatch):
    monkeypatch.setenv("ATARI_CHECKPOINTS", "7,8")
    with pytest.raises(WarehouseError, match=r"suffixes \[7, 8\] are not in the source"):
        materialize_partition("atari", "Pong/5", instance=instance)


def test_openx_streaming_mode_keeps_no_raw_copy_and_gives_the_same_ted(
    warehouse_env, instance, monkeypatch, tmp_path
):
    materialize_partition("openx", "cmu_stretch", through="ted", instance=instance)
    downloaded = _ted_arrays(open_ted("openx", "cmu_stretch"))
    monkeypatch.setenv("EPISODE_WAREHOUSE_ROOT", str(tmp_path / "streamed"))
    monkeypatch.setenv("OPENX_MODE", "streaming")
    materialize_partition("openx", "cmu_stretch", through="ted", instance=instance)
    raw = WarehouseLayout.from_root(tmp_path / "streamed").raw_dir("openx", "cmu_stretch")
    assert (raw / "meta.json").is_file() and not list(raw.glob("*.tar"))
    streamed = _ted_arrays(open_ted("openx", "cmu_stretch"))
    assert streamed.keys() == downloaded.keys()
    for key in streamed:
        np.testing.assert_array_equal(streamed[key], downloaded[key], err_msg=str(key))


def test_the_cli_leaves_the_catalog_asset_materialized(warehouse_env, instance):
    """#43: after the demo the UI said episode_catalog was never materialized (it waited for
    its 15-minute cron although every partition's rows were in)."""
    import dagster as dg

    from warehouse_cli.main import main

    assert main(["materialize", "atari", "Pong/5", "--through", "ted"]) == 0
    assert instance.get_latest_materialization_event(dg.AssetKey("episode_catalog")) is None
    assert main(["materialize", "atari", "Pong/5", "--through", "catalog"]) == 0
    event = instance.get_latest_materialization_event(dg.AssetKey("episode_catalog"))
    assert event is not None
    assert event.asset_materialization.metadata["partitions"].value == 1
