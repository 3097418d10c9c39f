"""The code location loads with the asset keys, groups, partitions and resources documented."""

import dagster as dg
import pytest

from definitions import defs
from episode_warehouse.sources.atari.games import GAMES


def test_asset_keys_and_groups():
    graph = defs.resolve_asset_graph()
    groups = {key.to_user_string(): graph.get(key).group_name for key in graph.get_all_asset_keys()}
    assert groups == {
        "atari_replay_files": "atari",
        "atari_episodes": "atari",
        "atari_ted": "atari",
        "openx_shards": "openx",
        "openx_episodes": "openx",
        "openx_ted": "openx",
        "atari_catalog_rows": "catalog",
        "openx_catalog_rows": "catalog",
        "atari_statistics": "catalog",
        "openx_statistics": "catalog",
        "lerobot_files": "lerobot_source",
        "lerobot_episodes": "lerobot_source",
        "lerobot_ted": "lerobot_source",
        "lerobot_catalog_rows": "catalog",
        "lerobot_statistics": "catalog",
        "minari_files": "minari",
        "minari_episodes": "minari",
        "minari_ted": "minari",
        "minari_catalog_rows": "catalog",
        "minari_statistics": "catalog",
        "episode_catalog": "catalog",
        "atari_standardized": "standardized",
        "openx_standardized": "standardized",
        "lerobot_standardized": "standardized",
        "minari_standardized": "standardized",
        "atari_lerobot_export": "lerobot",
        "openx_lerobot_export": "lerobot",
        "lerobot_lerobot_export": "lerobot",
        "minari_lerobot_export": "lerobot",
        "selection_lerobot_export": "lerobot",
        "episode_duplicates": "curation",
        **{
            f"{source}_score_{score}": "curation"
            for source in ("atari", "openx", "lerobot", "minari")
            for score in ("quality", "success_progress")
        },
    }


def test_lineage_edges():
    graph = defs.resolve_asset_graph()

    def parents(name):
        return {k.to_user_string() for k in graph.get(dg.AssetKey(name)).parent_keys}

    assert parents("atari_episodes") == {"atari_replay_files"}
    assert parents("atari_ted") == {"atari_episodes"}
    assert parents("atari_catalog_rows") == {"atari_ted"}
    assert parents("openx_ted") == {"openx_episodes"}
    assert parents("lerobot_episodes") == {"lerobot_files"}
    assert parents("lerobot_ted") == {"lerobot_episodes"}
    assert parents("minari_episodes") == {"minari_files"}
    assert parents("minari_ted") == {"minari_episodes"}
    assert parents("openx_score_quality") == {"openx_ted", "openx_catalog_rows"}
    assert parents("episode_duplicates") == {
        f"{s}_catalog_rows" for s in ("atari", "openx", "lerobot", "minari")
    }
    assert parents("episode_catalog") == {
        "atari_catalog_rows",
        "openx_catalog_rows",
        "lerobot_catalog_rows",
        "minari_catalog_rows",
    }


def test_partitions():
    graph = defs.resolve_asset_graph()
    atari = graph.get(dg.AssetKey("atari_ted")).partitions_def
    keys = atari.get_partition_keys()
    assert len(keys) == 300 == len(GAMES) * 5
    assert "Pong/5" in keys and "Zaxxon/1" in keys
    openx = graph.get(dg.AssetKey("openx_ted")).partitions_def
    assert isinstance(openx, dg.DynamicPartitionsDefinition) and openx.name == "openx_datasets"


def test_every_asset_has_code_version_and_description():
    graph = defs.resolve_asset_graph()
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        assert node.code_version, key
        assert node.description, key


def test_resources():
    assert set(defs.resources) >= {"warehouse", "atari_replay", "openx_source", "lerobot_source"}


def test_configuration_is_read_when_each_run_starts(warehouse_env, monkeypatch, tmp_path):
    """One loaded code location; the environment (or the run's resource config) of each run
    decides where it reads and writes."""
    from episode_warehouse.errors import WarehouseError
    from warehouse_cli.runner import materialize_partition

    raw = ("raw", "openx", "bridge", "meta.json")
    with dg.instance_for_test() as instance:
        materialize_partition("openx", "bridge", through="raw", instance=instance)
        assert warehouse_env.joinpath(*raw).is_file()
        monkeypatch.setenv("EPISODE_WAREHOUSE_ROOT", str(tmp_path / "second"))
        materialize_partition("openx", "bridge", through="raw", instance=instance)
        assert (tmp_path / "second").joinpath(*raw).is_file()
        third = str(tmp_path / "third")
        materialize_partition(
            "openx",
            "bridge",
            through="raw",
            instance=instance,
            resources={"warehouse": {"root": third}},
        )
        assert (tmp_path / "third").joinpath(*raw).is_file()
        monkeypatch.setenv("OPENX_MODE", "stream")
        with pytest.raises(WarehouseError, match="OPENX_MODE: 'stream' is not one of"):
            materialize_partition("openx", "bridge", through="raw", instance=instance)
